//! A minimal SVG line-chart writer (no dependency): paths, curves and rates of every method.
//!
//! A [`LineChart`] has a title, two axes (linear or log10) and any number of [`Series`]; several
//! charts can be stacked vertically into one SVG document with [`stack_svg`]. Non-finite points
//! (and non-positive ones on a log axis) are skipped and break the line.

use std::fmt::Write;

/// Axis scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Linear.
    Linear,
    /// Base-10 logarithm (only positive values are drawn).
    Log10,
}

/// One axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Label under (x) or beside (y) the axis.
    pub label: String,
    /// Scale.
    pub scale: Scale,
}

/// One curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// `(x, y)` points in drawing order.
    pub points: Vec<(f64, f64)>,
    /// Any SVG colour (`"#1f77b4"`, `"red"`).
    pub color: String,
}

/// A line chart.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// Title above the plot area.
    pub title: String,
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// Curves.
    pub series: Vec<Series>,
    /// Width in pixels.
    pub width: f64,
    /// Height in pixels.
    pub height: f64,
}

const ML: f64 = 70.0;
const MR: f64 = 150.0;
const MT: f64 = 30.0;
const MB: f64 = 45.0;

fn tr(s: Scale, v: f64) -> Option<f64> {
    match s {
        Scale::Linear if v.is_finite() => Some(v),
        Scale::Log10 if v.is_finite() && v > 0.0 => Some(v.log10()),
        _ => None,
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Tick positions (in transformed units) for `[lo, hi]`.
fn ticks(s: Scale, lo: f64, hi: f64) -> Vec<f64> {
    match s {
        Scale::Log10 => {
            let (a, b) = (lo.floor() as i64, hi.ceil() as i64);
            let step = ((b - a) / 8).max(1);
            (a..=b)
                .step_by(step as usize)
                .map(|k| k as f64)
                .filter(|&t| t >= lo - 1e-9 && t <= hi + 1e-9)
                .collect()
        }
        Scale::Linear => {
            let span = (hi - lo).max(f64::MIN_POSITIVE);
            let raw = span / 5.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|m| m * mag)
                .find(|&st| span / st <= 6.0)
                .unwrap_or(10.0 * mag);
            let mut t = (lo / step).ceil() * step;
            let mut out = Vec::new();
            while t <= hi + 1e-9 * span && out.len() < 20 {
                out.push(t);
                t += step;
            }
            out
        }
    }
}

fn tick_label(s: Scale, t: f64) -> String {
    match s {
        Scale::Log10 => format!("1e{}", t.round() as i64),
        Scale::Linear => {
            let v = if t.abs() < 1e-12 { 0.0 } else { t };
            format!("{}", (v * 1e6).round() / 1e6)
        }
    }
}

impl LineChart {
    /// An empty chart of the default size (640 x 320).
    pub fn new(title: &str, x: Axis, y: Axis) -> Self {
        Self {
            title: title.to_string(),
            x,
            y,
            series: Vec::new(),
            width: 640.0,
            height: 320.0,
        }
    }

    /// Adds a curve.
    pub fn add(mut self, name: &str, color: &str, points: Vec<(f64, f64)>) -> Self {
        self.series.push(Series {
            name: name.to_string(),
            points,
            color: color.to_string(),
        });
        self
    }

    /// The chart's SVG elements, drawn with its top-left corner at `(0, dy)`.
    fn body(&self, dy: f64, out: &mut String) {
        let pts: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter_map(|&(x, y)| Some((tr(self.x.scale, x)?, tr(self.y.scale, y)?)))
            .collect();
        let (mut x0, mut x1, mut y0, mut y1) = (0.0, 1.0, 0.0, 1.0);
        if !pts.is_empty() {
            x0 = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
            x1 = pts.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
            y0 = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
            y1 = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
        }
        if self.y.scale == Scale::Linear {
            y0 = y0.min(0.0);
        }
        if x1 - x0 < 1e-12 {
            x0 -= 0.5;
            x1 += 0.5;
        }
        if y1 - y0 < 1e-12 {
            y0 -= 0.5;
            y1 += 0.5;
        }
        let pad = 0.05 * (y1 - y0);
        y1 += pad;
        if self.y.scale == Scale::Log10 {
            y0 -= pad;
        }
        let (pw, ph) = (self.width - ML - MR, self.height - MT - MB);
        let sx = |x: f64| ML + (x - x0) / (x1 - x0) * pw;
        let sy = |y: f64| dy + MT + ph - (y - y0) / (y1 - y0) * ph;
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="14" text-anchor="middle">{}</text>"##,
            ML + pw / 2.0,
            dy + MT - 10.0,
            esc(&self.title)
        );
        let _ = writeln!(
            out,
            r##"<rect x="{ML:.1}" y="{:.1}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#444"/>"##,
            dy + MT
        );
        for t in ticks(self.x.scale, x0, x1) {
            let x = sx(t);
            let _ = writeln!(
                out,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"##,
                dy + MT,
                dy + MT + ph,
                dy + MT + ph + 15.0,
                tick_label(self.x.scale, t)
            );
        }
        for t in ticks(self.y.scale, y0, y1) {
            let y = sy(t);
            let _ = writeln!(
                out,
                r##"<line x1="{ML:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
                ML + pw,
                ML - 5.0,
                y + 4.0,
                tick_label(self.y.scale, t)
            );
        }
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"##,
            ML + pw / 2.0,
            dy + self.height - 8.0,
            esc(&self.x.label)
        );
        let _ = writeln!(
            out,
            r##"<text x="15" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 15 {:.1})">{}</text>"##,
            dy + MT + ph / 2.0,
            dy + MT + ph / 2.0,
            esc(&self.y.label)
        );
        for (k, s) in self.series.iter().enumerate() {
            let mut d = String::new();
            let mut pen = false;
            for &(x, y) in &s.points {
                match (tr(self.x.scale, x), tr(self.y.scale, y)) {
                    (Some(x), Some(y)) => {
                        let _ = write!(
                            d,
                            "{}{:.1},{:.1} ",
                            if pen { "L" } else { "M" },
                            sx(x),
                            sy(y)
                        );
                        pen = true;
                    }
                    _ => pen = false,
                }
            }
            let color = esc(&s.color);
            let _ = writeln!(
                out,
                r##"<path d="{}" fill="none" stroke="{color}" stroke-width="1.8"/>"##,
                d.trim_end()
            );
            for &(x, y) in &s.points {
                if let (Some(x), Some(y)) = (tr(self.x.scale, x), tr(self.y.scale, y)) {
                    let _ = writeln!(
                        out,
                        r##"<circle cx="{:.1}" cy="{:.1}" r="2.2" fill="{color}"/>"##,
                        sx(x),
                        sy(y)
                    );
                }
            }
            // Unnamed series (e.g. one line per network node) get no legend entry.
            if s.name.is_empty() {
                continue;
            }
            let k = self.series[..k]
                .iter()
                .filter(|s| !s.name.is_empty())
                .count();
            let ly = dy + MT + 14.0 + 18.0 * k as f64;
            let lx = ML + pw + 12.0;
            let _ = writeln!(
                out,
                r##"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="2"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"##,
                lx + 18.0,
                lx + 24.0,
                ly + 4.0,
                esc(&s.name)
            );
        }
    }

    /// A standalone SVG document.
    pub fn to_svg(&self) -> String {
        stack_svg(std::slice::from_ref(self))
    }
}

/// Several charts stacked vertically in one SVG document (width of the widest).
pub fn stack_svg(charts: &[LineChart]) -> String {
    let w = charts.iter().map(|c| c.width).fold(0.0, f64::max);
    let h: f64 = charts.iter().map(|c| c.height).sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="sans-serif">"##
    );
    let _ = writeln!(out, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let mut dy = 0.0;
    for c in charts {
        c.body(dy, &mut out);
        dy += c.height;
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_has_one_path_per_series_and_escapes_text() {
        let c = LineChart::new(
            "rate <IT>",
            Axis {
                label: "C".into(),
                scale: Scale::Log10,
            },
            Axis {
                label: "rate".into(),
                scale: Scale::Linear,
            },
        )
        .add("a", "red", vec![(0.1, 0.2), (1.0, 0.5), (10.0, f64::NAN)])
        .add("b", "blue", vec![(0.0, 1.0), (100.0, 0.7)]);
        let s = stack_svg(&[c.clone(), c]);
        assert!(s.starts_with("<svg"));
        assert!(s.trim_end().ends_with("</svg>"));
        assert_eq!(s.matches("<path").count(), 4);
        assert!(s.contains("rate &lt;IT&gt;"));
        assert!(!s.contains("NaN"));
    }
}
