//! The two text formats a scraper may ask for, and the choice between
//! them by its `Accept` header.

use prometheus_client::registry::Registry;

/// An exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The classic Prometheus text format, version 0.0.4: the default.
    Text,
    /// OpenMetrics 1.0 text (`# EOF`, `# UNIT`, counters' families named
    /// without `_total`): what Prometheus asks for first.
    OpenMetrics,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }

    /// The format `accept` (an `Accept` header's value) prefers: the
    /// acceptable one of highest `q`, OpenMetrics on a tie; without an
    /// acceptable one (or without the header), the classic text format,
    /// which every scraper reads.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let mut best: Option<(f32, Format)> = None;
        for range in accept.unwrap_or("").split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("").to_ascii_lowercase();
            let (mut q, mut version) = (1.0f32, None);
            for p in parts {
                let Some((k, v)) = p.split_once('=') else {
                    continue;
                };
                match k.trim().to_ascii_lowercase().as_str() {
                    "q" => q = v.trim().parse().unwrap_or(0.0),
                    "version" => version = Some(v.trim().trim_matches('"').to_string()),
                    _ => {}
                }
            }
            let format = match (media.as_str(), version.as_deref()) {
                ("application/openmetrics-text", None | Some("1.0.0" | "0.0.1")) => {
                    Format::OpenMetrics
                }
                ("text/plain", None | Some("0.0.4")) | ("text/*" | "*/*", _) => Format::Text,
                _ => continue,
            };
            if q <= 0.0 {
                continue;
            }
            let better = match best {
                None => true,
                Some((bq, bf)) => {
                    q > bq || (q == bq && format == Format::OpenMetrics && bf != format)
                }
            };
            if better {
                best = Some((q, format));
            }
        }
        best.map_or(Format::Text, |(_, f)| f)
    }
}

/// The registry's metrics in `format`.
pub fn encode(registry: &Registry, format: Format) -> String {
    let mut out = String::with_capacity(16 * 1024);
    // Writing to a String cannot fail; a metric's encoder returns an
    // error only for a malformed metric, which our families are not.
    let _ = match format {
        Format::Text => prometheus_client::encoding::prometheus_text::encode(&mut out, registry),
        Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, registry),
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_chooses_the_format() {
        let n = |a| Format::negotiate(Some(a));
        // Prometheus 2.42's header.
        assert_eq!(
            n("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
            Format::OpenMetrics
        );
        assert_eq!(Format::negotiate(None), Format::Text);
        assert_eq!(n("*/*"), Format::Text);
        assert_eq!(n("text/plain"), Format::Text);
        assert_eq!(n("text/plain;version=0.0.4"), Format::Text);
        assert_eq!(n("application/openmetrics-text"), Format::OpenMetrics);
        assert_eq!(
            n("text/plain;q=0.9, application/openmetrics-text;q=0.5"),
            Format::Text
        );
        assert_eq!(
            n("application/openmetrics-text; version=1.0.0; q=0.5, */*;q=0.5"),
            Format::OpenMetrics
        );
        // Versions and types we do not write are not chosen.
        assert_eq!(
            n("application/openmetrics-text;version=2.0.0, text/plain;q=0.1"),
            Format::Text
        );
        assert_eq!(n("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"), Format::Text);
        assert_eq!(
            n("application/openmetrics-text;q=0, text/plain;q=0.2"),
            Format::Text
        );
        assert_eq!(n("garbage;;;=,"), Format::Text);
    }
}
