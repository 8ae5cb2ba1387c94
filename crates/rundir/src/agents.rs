//! The agents of a run that many hosts ran (`cacheoff run --agents`): who
//! they were, what share of the run each had, and whether each finished.
//! The manifest lists them from the start; the summary says how each
//! ended and whether the run is partial.

use serde::{Deserialize, Serialize};

/// One agent of a run many hosts ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRecord {
    /// `HOST:PORT` as the coordinator reached it.
    pub addr: String,
    /// `clients`, `servers` or `both`.
    pub role: String,
    /// Its share of the robots, an exact fraction (`"2/6"`: two of the
    /// run's six workers), `"0"` for a host of origin servers only.
    pub share: String,
    /// The run's workers it ran, `[first, end)`.
    pub workers: [u32; 2],
    /// The origin servers it ran, `[first, end)`.
    pub servers: [u32; 2],
    /// The agent's `cacheoff --version`.
    pub version: String,
    /// Its clock minus the coordinator's, measured at the handshake.
    pub clock_offset_ms: f64,
    /// `running` in the manifest while the run goes on; `complete` or
    /// `lost` at the end.
    pub state: AgentState,
    /// This agent's share is missing from part of the run (it was lost).
    #[serde(default)]
    pub partial: bool,
    /// Seconds of run time when the coordinator lost it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_at_s: Option<f64>,
    /// Why it was lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_why: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentState {
    Running,
    Complete,
    Lost,
}

/// Whether a run of these agents is partial: any was lost.
pub fn partial(agents: &[AgentRecord]) -> bool {
    agents.iter().any(|a| a.state == AgentState::Lost)
}
