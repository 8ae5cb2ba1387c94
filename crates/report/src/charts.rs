//! SVG charts, drawn with plotters at report time. Plotters was chosen
//! over a JavaScript chart library because the charts then need nothing
//! at view time: no script, no network, no font files (the browser lays out
//! the SVG text), and the report file is the same for every viewer.

use crate::ReportError;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::ops::Range;

/// Series colours, distinguishable for most colour-blind readers (Okabe-Ito).
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
];

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed-looking (thinner, lighter) to mark a reference line,
    /// e.g. the offered hit ratio beside the measured one.
    pub reference: bool,
    /// Palette index, to pair a reference with its series; else the
    /// series' position.
    pub colour: Option<usize>,
}

impl Series {
    pub fn new(name: &str, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            reference: false,
            colour: None,
        }
    }
    pub fn reference(mut self) -> Series {
        self.reference = true;
        self
    }
    /// Draws in the palette colour of series `i`.
    pub fn like(mut self, i: usize) -> Series {
        self.colour = Some(i);
        self
    }
}

/// A named span of the x axis (a phase), shaded in the background.
#[derive(Debug, Clone)]
pub struct Band {
    pub name: String,
    pub start: f64,
    pub end: f64,
}

/// A line chart over time (seconds from the run start).
#[derive(Debug, Clone)]
pub struct TimeChart {
    pub title: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub bands: Vec<Band>,
}

fn err(chart: &str) -> impl Fn(String) -> ReportError + '_ {
    move |why| ReportError::Chart {
        chart: chart.into(),
        why,
    }
}

fn x_range(series: &[Series], bands: &[Band]) -> Range<f64> {
    let hi = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(bands.iter().map(|b| b.end))
        .fold(0.0, f64::max);
    0.0..hi.max(1.0)
}

fn y_range(series: &[Series]) -> Range<f64> {
    let hi = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    0.0..(hi * 1.08).max(1e-9).max(if hi == 0.0 { 1.0 } else { 0.0 })
}

/// Series with at least two points (a line to draw).
pub fn drawable(series: &[Series]) -> usize {
    series.iter().filter(|s| s.points.len() >= 2).count()
}

/// Data points of all series (of a line chart).
pub fn points(series: &[Series]) -> usize {
    series.iter().map(|s| s.points.len()).sum()
}

/// An SVG of `size` on a white ground, drawn by `draw`.
fn svg_of(
    size: (u32, u32),
    e: &impl Fn(String) -> ReportError,
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), ReportError>,
) -> Result<String, ReportError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(x.to_string()))?;
        draw(&root)?;
        root.present().map_err(|x| e(x.to_string()))?;
    }
    Ok(out)
}

/// Draws each series as a line (references thinner and lighter), placing
/// its points with `at`, and the legend at `legend`.
fn draw_lines<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    series: &[Series],
    at: impl Fn(&(f64, f64)) -> (f64, f64),
    legend: SeriesLabelPosition,
    e: &impl Fn(String) -> ReportError,
) -> Result<(), ReportError>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (i, s) in series.iter().enumerate() {
        let colour = PALETTE[s.colour.unwrap_or(i) % PALETTE.len()];
        let style = if s.reference {
            colour.mix(0.55).stroke_width(1)
        } else {
            colour.stroke_width(2)
        };
        chart
            .draw_series(LineSeries::new(s.points.iter().map(&at), style))
            .map_err(|x| e(x.to_string()))?
            .label(s.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
    }
    if !series.is_empty() {
        chart
            .configure_series_labels()
            .position(legend)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .draw()
            .map_err(|x| e(x.to_string()))?;
    }
    Ok(())
}

impl TimeChart {
    pub fn svg(&self, size: (u32, u32)) -> Result<String, ReportError> {
        let e = err(&self.title);
        svg_of(size, &e, |root| {
            let xr = x_range(&self.series, &self.bands);
            let yr = y_range(&self.series);
            let mut chart = ChartBuilder::on(root)
                .margin(10)
                .x_label_area_size(34)
                .y_label_area_size(64)
                .build_cartesian_2d(xr.clone(), yr.clone())
                .map_err(|x| e(x.to_string()))?;
            // Phases first, so lines draw over them.
            for (i, b) in self.bands.iter().enumerate() {
                let shade = if i % 2 == 0 {
                    RGBColor(236, 240, 246)
                } else {
                    RGBColor(248, 249, 251)
                };
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(b.start, yr.start), (b.end, yr.end)],
                        shade.filled(),
                    )))
                    .map_err(|x| e(x.to_string()))?;
            }
            chart
                .configure_mesh()
                .light_line_style(RGBColor(235, 235, 235))
                .x_desc("seconds from start")
                .y_desc(self.y_label.as_str())
                .y_label_formatter(&|v| short_number(*v))
                .draw()
                .map_err(|x| e(x.to_string()))?;
            // Phase names along the top, where there is room.
            let width = f64::from(size.0);
            for b in &self.bands {
                let share = (b.end - b.start) / (xr.end - xr.start);
                if share * width > 8.0 * b.name.len() as f64 {
                    chart
                        .draw_series(std::iter::once(Text::new(
                            b.name.clone(),
                            (b.start + (b.end - b.start) * 0.02, yr.end * 0.97),
                            ("sans-serif", 11).into_font().color(&RGBColor(90, 90, 90)),
                        )))
                        .map_err(|x| e(x.to_string()))?;
                }
            }
            draw_lines(
                &mut chart,
                &self.series,
                |p| *p,
                SeriesLabelPosition::UpperRight,
                &e,
            )
        })
    }
}

/// Cumulative distributions on a logarithmic value axis.
#[derive(Debug, Clone)]
pub struct CdfChart {
    pub title: String,
    pub x_label: String,
    /// Points are `(value, percent at or below)`.
    pub series: Vec<Series>,
}

impl CdfChart {
    pub fn svg(&self, size: (u32, u32)) -> Result<String, ReportError> {
        let e = err(&self.title);
        let values = || {
            self.series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.0))
                .filter(|v| *v > 0.0)
        };
        let lo = values().fold(f64::INFINITY, f64::min);
        let hi = values().fold(0.0, f64::max);
        let (lo, hi) = if lo.is_finite() && hi > lo {
            (lo * 0.8, hi * 1.25)
        } else {
            (0.01, 1000.0)
        };
        svg_of(size, &e, |root| {
            let mut chart = ChartBuilder::on(root)
                .margin(10)
                .x_label_area_size(34)
                .y_label_area_size(50)
                .build_cartesian_2d((lo..hi).log_scale(), 0f64..100.0)
                .map_err(|x| e(x.to_string()))?;
            chart
                .configure_mesh()
                .light_line_style(RGBColor(235, 235, 235))
                .x_desc(self.x_label.as_str())
                .y_desc("% at or below")
                .x_label_formatter(&|v| short_number(*v))
                .draw()
                .map_err(|x| e(x.to_string()))?;
            draw_lines(
                &mut chart,
                &self.series,
                |&(v, p)| (v.max(lo), p),
                SeriesLabelPosition::LowerRight,
                &e,
            )
        })
    }
}

/// Labelled bars (a histogram over named buckets).
#[derive(Debug, Clone)]
pub struct BarChart {
    pub title: String,
    pub y_label: String,
    pub bars: Vec<(String, f64)>,
}

impl BarChart {
    pub fn points(&self) -> usize {
        self.bars.len()
    }

    pub fn svg(&self, size: (u32, u32)) -> Result<String, ReportError> {
        let e = err(&self.title);
        let n = self.bars.len().max(1);
        let top = self.bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1.0) * 1.08;
        let labels: Vec<String> = self.bars.iter().map(|b| b.0.clone()).collect();
        svg_of(size, &e, |root| {
            let mut chart = ChartBuilder::on(root)
                .margin(10)
                .x_label_area_size(40)
                .y_label_area_size(60)
                // A segmented 0..k has k + 1 slots.
                .build_cartesian_2d((0u32..(n as u32 - 1).max(1)).into_segmented(), 0f64..top)
                .map_err(|x| e(x.to_string()))?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .light_line_style(RGBColor(235, 235, 235))
                .y_desc(self.y_label.as_str())
                .x_labels(n + 1)
                .x_label_formatter(&|v| match v {
                    SegmentValue::CenterOf(i) => {
                        labels.get(*i as usize).cloned().unwrap_or_default()
                    }
                    _ => String::new(),
                })
                .y_label_formatter(&|v| short_number(*v))
                .draw()
                .map_err(|x| e(x.to_string()))?;
            chart
                .draw_series(self.bars.iter().enumerate().map(|(i, (_, v))| {
                    let i = i as u32;
                    let mut r = Rectangle::new(
                        [
                            (SegmentValue::Exact(i), 0.0),
                            (SegmentValue::Exact(i + 1), *v),
                        ],
                        PALETTE[0].filled(),
                    );
                    r.set_margin(0, 0, 3, 3);
                    r
                }))
                .map_err(|x| e(x.to_string()))?;
            Ok(())
        })
    }
}

/// The load–response-time curve of a peak search (the "knee"): each
/// step a point at its rate, filled when it kept the limit, hollow when
/// not, the steps' line in rate order, the limit across and the peak
/// found as a vertical line.
#[derive(Debug, Clone)]
pub struct KneeChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// `(rate, response time, passed)` per step.
    pub steps: Vec<(f64, f64, bool)>,
    pub limit: f64,
    pub peak: Option<f64>,
}

impl KneeChart {
    pub fn svg(&self, size: (u32, u32)) -> Result<String, ReportError> {
        let e = err(&self.title);
        let finite = |v: &f64| v.is_finite();
        let x_hi = self
            .steps
            .iter()
            .map(|s| s.0)
            .filter(finite)
            .fold(1.0, f64::max)
            * 1.08;
        // Far-off failures would flatten the knee: the axis stops at four
        // times the limit, and higher points sit on its top edge.
        let y_cap = self.limit * 4.0;
        let y_top = self
            .steps
            .iter()
            .map(|s| s.1)
            .filter(finite)
            .fold(self.limit, f64::max)
            .min(y_cap)
            * 1.08;
        let at =
            |&(x, y, _): &(f64, f64, bool)| (x, if y.is_finite() { y.min(y_top) } else { y_top });
        let mut line: Vec<(f64, f64, bool)> = self.steps.clone();
        line.sort_by(|a, b| a.0.total_cmp(&b.0));
        svg_of(size, &e, |root| {
            let mut chart = ChartBuilder::on(root)
                .margin(10)
                .x_label_area_size(34)
                .y_label_area_size(64)
                .build_cartesian_2d(0f64..x_hi, 0f64..y_top)
                .map_err(|x| e(x.to_string()))?;
            chart
                .configure_mesh()
                .light_line_style(RGBColor(235, 235, 235))
                .x_desc(self.x_label.as_str())
                .y_desc(self.y_label.as_str())
                .x_label_formatter(&|v| short_number(*v))
                .y_label_formatter(&|v| short_number(*v))
                .draw()
                .map_err(|x| e(x.to_string()))?;
            let limit_style = PALETTE[1].stroke_width(2);
            chart
                .draw_series(LineSeries::new(
                    [(0.0, self.limit), (x_hi, self.limit)],
                    limit_style,
                ))
                .map_err(|x| e(x.to_string()))?
                .label(format!("limit {}", short_number(self.limit)))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], limit_style));
            if let Some(p) = self.peak {
                let style = PALETTE[2].stroke_width(2);
                chart
                    .draw_series(LineSeries::new([(p, 0.0), (p, y_top)], style))
                    .map_err(|x| e(x.to_string()))?
                    .label(format!("peak {}", short_number(p)))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
            }
            let colour = PALETTE[0];
            chart
                .draw_series(LineSeries::new(
                    line.iter().map(at),
                    colour.mix(0.5).stroke_width(1),
                ))
                .map_err(|x| e(x.to_string()))?;
            chart
                .draw_series(self.steps.iter().map(|s| {
                    let style = if s.2 {
                        colour.filled()
                    } else {
                        colour.stroke_width(2)
                    };
                    Circle::new(at(s), 5, style)
                }))
                .map_err(|x| e(x.to_string()))?
                .label("steps (hollow: over the limit)")
                .legend(move |(x, y)| Circle::new((x + 9, y), 4, colour.filled()));
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(200, 200, 200))
                .draw()
                .map_err(|x| e(x.to_string()))
        })
    }
}

/// 1234567 -> "1.23M", 0.5 -> "0.5".
pub fn short_number(v: f64) -> String {
    let a = v.abs();
    let (x, unit) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_draws_every_series_and_phase() {
        let c = TimeChart {
            title: "t".into(),
            y_label: "replies/s".into(),
            series: vec![
                Series::new("a", (0..50).map(|i| (i as f64 * 5.0, i as f64)).collect()),
                Series::new("b", vec![(0.0, 1.0), (250.0, 2.0)]).reference(),
            ],
            bands: vec![
                Band {
                    name: "warm".into(),
                    start: 0.0,
                    end: 100.0,
                },
                Band {
                    name: "top".into(),
                    start: 100.0,
                    end: 250.0,
                },
            ],
        };
        let svg = c.svg((800, 260)).unwrap();
        assert!(svg.starts_with("<svg"));
        // Axes are black; data lines and their legend marks are coloured.
        assert_eq!(coloured_lines(&svg), 2 + 2, "two lines, two legend marks");
        assert_eq!(drawable(&c.series), 2);
        assert!(svg.contains(">\nwarm\n</text>") && svg.contains("replies/s"));
        assert_eq!(points(&c.series), 52);
    }

    fn coloured_lines(svg: &str) -> usize {
        svg.match_indices("<polyline")
            .filter(|(i, _)| {
                let tag = &svg[*i..*i + svg[*i..].find('>').unwrap()];
                !tag.contains("stroke=\"#000000\"")
            })
            .count()
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(short_number(1_234_567.0), "1.23M");
        assert_eq!(short_number(25_000.0), "25k");
        assert_eq!(short_number(0.5), "0.5");
        assert_eq!(short_number(400.0), "400");
    }
}
