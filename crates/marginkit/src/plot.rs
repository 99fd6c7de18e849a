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
/// Height of one legend row.
const LEGEND_ROW: f64 = 18.0;

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

/// Tick positions (in transformed units) for `[lo, hi]`: at least three where the range allows.
/// A log axis spanning few decades gets 1-2-5 (then 1..9) ticks within each decade, and one
/// spanning less than a factor of two gets linear ticks in value space.
fn ticks(s: Scale, lo: f64, hi: f64) -> Vec<f64> {
    match s {
        Scale::Log10 => {
            let (a, b) = (lo.floor() as i64, hi.ceil() as i64);
            let inside = |t: &f64| *t >= lo - 1e-9 && *t <= hi + 1e-9;
            let step = ((b - a) / 8).max(1);
            let decades: Vec<f64> = (a..=b)
                .step_by(step as usize)
                .map(|k| k as f64)
                .filter(inside)
                .collect();
            if decades.len() >= 3 {
                return decades;
            }
            for mantissas in [
                &[1.0, 2.0, 5.0][..],
                &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
            ] {
                let t: Vec<f64> = (a..=b)
                    .flat_map(|k| mantissas.iter().map(move |&m: &f64| k as f64 + m.log10()))
                    .filter(inside)
                    .collect();
                if t.len() >= 3 {
                    return t;
                }
            }
            ticks(Scale::Linear, 10f64.powf(lo), 10f64.powf(hi))
                .into_iter()
                .filter(|&v| v > 0.0)
                .map(f64::log10)
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

/// A short label for a tick value: up to four significant digits, trailing zeros dropped, and
/// an exponent (`2e-5`, `1.5e6`) outside `[1e-3, 1e5)`.
fn number_label(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            v.to_string()
        };
    }
    let e = v.abs().log10().floor() as i32;
    let trim = |t: String| {
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t
        }
    };
    if !(-3..5).contains(&e) {
        let m = v / 10f64.powi(e);
        // Rounding may carry the mantissa to 10.
        let (m, e) = if (m.abs() * 1000.0).round() >= 10_000.0 {
            (m / 10.0, e + 1)
        } else {
            (m, e)
        };
        format!("{}e{e}", trim(format!("{m:.3}")))
    } else {
        let decimals = (3 - e).max(0) as usize;
        trim(format!("{v:.decimals$}"))
    }
}

fn tick_label(s: Scale, t: f64) -> String {
    match s {
        Scale::Log10 => number_label(10f64.powf(t)),
        Scale::Linear => number_label(if t.abs() < 1e-12 { 0.0 } else { t }),
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
        let height = self.drawn_height();
        let (pw, ph) = (self.width - ML - MR, height - MT - MB);
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
            dy + height - 8.0,
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
            let ly = dy + MT + 14.0 + LEGEND_ROW * k as f64;
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

    /// The height drawn: [`LineChart::height`], or more when the legend (one 18-pixel row per
    /// named series beside the plot area) needs it, so that no legend entry runs into the next
    /// chart or off the document.
    pub fn drawn_height(&self) -> f64 {
        let named = self.series.iter().filter(|s| !s.name.is_empty()).count();
        let legend = 14.0 + LEGEND_ROW * named as f64;
        self.height.max(MT + legend + MB)
    }
}

/// Several charts stacked vertically in one SVG document (width of the widest).
pub fn stack_svg(charts: &[LineChart]) -> String {
    let w = charts.iter().map(|c| c.width).fold(0.0, f64::max);
    let h: f64 = charts.iter().map(LineChart::drawn_height).sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="sans-serif">"##
    );
    let _ = writeln!(out, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let mut dy = 0.0;
    for c in charts {
        c.body(dy, &mut out);
        dy += c.drawn_height();
    }
    out.push_str("</svg>\n");
    out
}

/// A grid of values drawn as coloured cells (a heat map), e.g. cross-validation accuracy over
/// `(log2 C, log2 gamma)`. Each cell shows its value; a colour bar gives the scale; one cell can
/// be outlined (the best point). Missing values (`NaN`) are left blank.
#[derive(Debug, Clone, PartialEq)]
pub struct HeatMap {
    /// Title above the cells.
    pub title: String,
    /// Label of the columns' coordinate.
    pub x_label: String,
    /// Label of the rows' coordinate.
    pub y_label: String,
    /// Label of the colour bar (what the values are).
    pub value_label: String,
    /// Column coordinates, left to right.
    pub xs: Vec<f64>,
    /// Row coordinates, bottom to top.
    pub ys: Vec<f64>,
    /// `values[r][c]` is the value at `(xs[c], ys[r])`.
    pub values: Vec<Vec<f64>>,
    /// The cell to outline, `(row, column)`.
    pub mark: Option<(usize, usize)>,
}

/// Colour of `t` in `[0, 1]` on a perceptually ordered dark-blue to yellow ramp.
fn ramp(t: f64) -> String {
    const STOPS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let u = t * (STOPS.len() - 1) as f64;
    let k = (u.floor() as usize).min(STOPS.len() - 2);
    let f = u - k as f64;
    let mix = |a: f64, b: f64| (a + (b - a) * f).round() as u8;
    let (p, q) = (STOPS[k], STOPS[k + 1]);
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(p.0, q.0),
        mix(p.1, q.1),
        mix(p.2, q.2)
    )
}

impl HeatMap {
    /// A standalone SVG document.
    pub fn to_svg(&self) -> String {
        let (nc, nr) = (self.xs.len(), self.ys.len());
        let cell = (560.0 / nc.max(1) as f64).clamp(28.0, 60.0);
        let (pw, ph) = (cell * nc as f64, cell * nr as f64);
        let (w, h) = (ML + pw + 110.0, MT + ph + MB);
        let finite = || {
            self.values
                .iter()
                .flatten()
                .copied()
                .filter(|v| v.is_finite())
        };
        let lo = finite().fold(f64::INFINITY, f64::min);
        let hi = finite().fold(f64::NEG_INFINITY, f64::max);
        let norm = |v: f64| {
            if hi > lo {
                (v - lo) / (hi - lo)
            } else {
                1.0
            }
        };
        let mut out = String::new();
        let _ = writeln!(
            out,
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="sans-serif">"##
        );
        let _ = writeln!(out, r##"<rect width="100%" height="100%" fill="white"/>"##);
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="14" text-anchor="middle">{}</text>"##,
            ML + pw / 2.0,
            MT - 10.0,
            esc(&self.title)
        );
        let font = (cell * 0.28).min(11.0);
        for (r, row) in self.values.iter().enumerate().take(nr) {
            let y = MT + ph - (r + 1) as f64 * cell;
            for (c, &v) in row.iter().enumerate().take(nc) {
                if !v.is_finite() {
                    continue;
                }
                let x = ML + c as f64 * cell;
                let t = norm(v);
                let ink = if t > 0.6 { "#000" } else { "#fff" };
                let _ = writeln!(
                    out,
                    r##"<rect x="{x:.1}" y="{y:.1}" width="{cell:.1}" height="{cell:.1}" fill="{}"/><text x="{:.1}" y="{:.1}" font-size="{font:.1}" text-anchor="middle" fill="{ink}">{}</text>"##,
                    ramp(t),
                    x + cell / 2.0,
                    y + cell / 2.0 + font / 3.0,
                    number_label(v)
                );
            }
        }
        if let Some((r, c)) = self.mark.filter(|&(r, c)| r < nr && c < nc) {
            let _ = writeln!(
                out,
                r##"<rect x="{:.1}" y="{:.1}" width="{cell:.1}" height="{cell:.1}" fill="none" stroke="#d62728" stroke-width="3"/>"##,
                ML + c as f64 * cell,
                MT + ph - (r + 1) as f64 * cell
            );
        }
        for (c, &x) in self.xs.iter().enumerate() {
            let _ = writeln!(
                out,
                r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"##,
                ML + (c as f64 + 0.5) * cell,
                MT + ph + 15.0,
                number_label(x)
            );
        }
        for (r, &y) in self.ys.iter().enumerate() {
            let _ = writeln!(
                out,
                r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
                ML - 5.0,
                MT + ph - (r as f64 + 0.5) * cell + 4.0,
                number_label(y)
            );
        }
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"##,
            ML + pw / 2.0,
            h - 8.0,
            esc(&self.x_label)
        );
        let _ = writeln!(
            out,
            r##"<text x="15" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 15 {:.1})">{}</text>"##,
            MT + ph / 2.0,
            MT + ph / 2.0,
            esc(&self.y_label)
        );
        // The colour bar: 20 steps from the lowest value (bottom) to the highest (top).
        let (bx, steps) = (ML + pw + 20.0, 20);
        for k in 0..steps {
            let _ = writeln!(
                out,
                r##"<rect x="{bx:.1}" y="{:.1}" width="16" height="{:.2}" fill="{}"/>"##,
                MT + ph - (k + 1) as f64 * ph / steps as f64,
                ph / steps as f64 + 0.5,
                ramp((k as f64 + 0.5) / steps as f64)
            );
        }
        if lo.is_finite() {
            for (v, y) in [(hi, MT + 4.0), (lo, MT + ph)] {
                let _ = writeln!(
                    out,
                    r##"<text x="{:.1}" y="{y:.1}" font-size="11">{}</text>"##,
                    bx + 20.0,
                    number_label(v)
                );
            }
        }
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(90 {:.1} {:.1})">{}</text>"##,
            bx + 70.0,
            MT + ph / 2.0,
            bx + 70.0,
            MT + ph / 2.0,
            esc(&self.value_label)
        );
        out.push_str("</svg>\n");
        out
    }
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

    /// Every legend row lies inside its own chart: a chart with more named series than its
    /// default height holds grows, and the next chart starts below it.
    #[test]
    fn long_legends_fit_their_chart() {
        let axis = || Axis {
            label: "x".into(),
            scale: Scale::Linear,
        };
        let mut c = LineChart::new("many", axis(), axis());
        for k in 0..20 {
            c = c.add(&format!("C = {k}"), "red", vec![(0.0, 1.0), (1.0, 2.0)]);
        }
        let short = LineChart::new("one", axis(), axis()).add("a", "blue", vec![(0.0, 1.0)]);
        assert_eq!(short.drawn_height(), short.height);
        assert!(c.drawn_height() > c.height);
        let s = stack_svg(&[c.clone(), short.clone()]);
        let h = c.drawn_height();
        assert!(s.contains(&format!(r#"height="{:.0}""#, h + short.height)));
        // The legend rows' text baselines, in order: all above the first chart's bottom.
        let ys: Vec<f64> = s
            .split("<text x=\"")
            .skip(1)
            .filter(|t| t.contains(">C = "))
            .map(|t| {
                let y = t.split("y=\"").nth(1).unwrap();
                y[..y.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        assert_eq!(ys.len(), 20);
        assert!(ys.iter().all(|&y| y < h - MB + 14.0), "{ys:?} vs {h}");
    }

    fn labels(scale: Scale, lo: f64, hi: f64) -> Vec<String> {
        ticks(scale, lo, hi)
            .into_iter()
            .map(|t| tick_label(scale, t))
            .collect()
    }

    #[test]
    fn log_axes_get_three_labelled_ticks_whatever_their_span() {
        // Many decades: one tick per decade (at most about 8).
        assert_eq!(labels(Scale::Log10, -4.0, 2.0).len(), 7);
        assert_eq!(labels(Scale::Log10, -4.0, 2.0)[0], "1e-4");
        // Three decades: one tick each.
        assert_eq!(
            labels(Scale::Log10, 2.5f64.log10(), 1300f64.log10()),
            ["10", "100", "1000"]
        );
        // One decade and a bit: 1-2-5 ticks.
        assert_eq!(
            labels(Scale::Log10, 2.5f64.log10(), 130f64.log10()),
            ["5", "10", "20", "50", "100"]
        );
        // Less than a decade: 1..9 ticks.
        assert_eq!(
            labels(Scale::Log10, 0.25f64.log10(), 0.72f64.log10()),
            ["0.3", "0.4", "0.5", "0.6", "0.7"]
        );
        // Less than a factor of two: linear ticks in value space.
        let t = labels(Scale::Log10, 1010f64.log10(), 1090f64.log10());
        assert!(t.len() >= 3, "{t:?}");
        assert_eq!(t[0], "1020");
    }

    #[test]
    fn number_labels_are_short_and_exact_for_round_values() {
        let cases = [
            (0.0, "0"),
            (0.1 + 0.2, "0.3"),
            (1234.5678, "1235"),
            (0.00012207, "1.221e-4"),
            (2e-5, "2e-5"),
            (1.5e6, "1.5e6"),
            (-250.0, "-250"),
            (99999.9, "100000"),
        ];
        for (v, want) in cases {
            assert_eq!(number_label(v), want, "{v}");
        }
    }

    #[test]
    fn heat_map_draws_every_finite_cell_and_outlines_the_mark() {
        let h = HeatMap {
            title: "cv <acc>".into(),
            x_label: "log2 C".into(),
            y_label: "log2 gamma".into(),
            value_label: "accuracy %".into(),
            xs: vec![-1.0, 1.0, 3.0],
            ys: vec![-7.0, -5.0],
            values: vec![vec![80.0, 82.5, f64::NAN], vec![75.0, 85.0, 84.0]],
            mark: Some((1, 1)),
        };
        let s = h.to_svg();
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        // 5 finite cells + 20 colour-bar steps + the background, and the mark.
        assert_eq!(s.matches("<rect").count(), 5 + 20 + 1 + 1);
        assert_eq!(s.matches(r##"stroke="#d62728""##).count(), 1);
        assert!(s.contains(">82.5<") && s.contains(">85<"));
        assert!(s.contains("cv &lt;acc&gt;"));
        assert!(!s.contains("NaN"));
        assert_eq!(ramp(0.0), "#440154");
        assert_eq!(ramp(1.0), "#fde725");
    }
}
