//! SVG bar charts of the benchmark's JSON, drawn from the document the run
//! writes (or one read back with `--chart-from`), so the picture shows the
//! numbers of the table printed next to it.
//!
//! The arms, their order and their colours come from the document, never
//! from a list here, so an arm added to or removed from the bench shows up
//! or disappears on the next run. Every text is measured with
//! [`text_width`], a deliberately generous estimate, and the canvas grows
//! to hold the widest one: nothing is cut off at the right edge.

use std::fmt::Write as _;

use serde_json::Value;

use crate::matrix::{MatrixArm, Stack};
use crate::matrix_report::size_label;

/// Width of `text` in pixels at `size` px, an upper bound for the common
/// sans-serif faces.
///
/// The per-character widths are those of DejaVu Sans (the widest of the
/// usual defaults: Helvetica and Arial are narrower), rounded up; anything
/// unknown counts as a full em. Bold adds 15%, as DejaVu Sans Bold does.
pub fn text_width(text: &str, size: f64, bold: bool) -> f64 {
    let ems: f64 = text
        .chars()
        .map(|c| match c {
            ' ' => 0.33,
            'i' | 'j' | 'l' | 'I' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' => 0.35,
            'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '/' | '-' => 0.45,
            'm' | 'w' | 'M' | 'W' | '%' | '@' => 1.0,
            '0'..='9' | 'a'..='z' => 0.65,
            'A'..='Z' => 0.8,
            '+' | '=' | '<' | '>' | '×' | '~' | '#' | '&' => 0.85,
            'µ' | '_' | '–' | '·' => 0.7,
            _ => 1.0,
        })
        .sum();
    ems * size * if bold { 1.15 } else { 1.0 }
}

/// Where a text's `x` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn attribute(self) -> &'static str {
        match self {
            Anchor::Start => "",
            Anchor::Middle => " text-anchor=\"middle\"",
            Anchor::End => " text-anchor=\"end\"",
        }
    }
}

/// Escapes text for SVG content and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// The elements of one chart, one per line, and how far right and down
/// they reach, so the canvas can be sized to them.
struct Canvas {
    elements: Vec<String>,
    right: f64,
    bottom: f64,
    font_size: f64,
}

/// How a text is drawn besides its position.
#[derive(Clone, Copy)]
struct Style<'a> {
    size: f64,
    anchor: Anchor,
    bold: bool,
    fill: Option<&'a str>,
    class: Option<&'a str>,
}

impl<'a> Style<'a> {
    fn new(size: f64) -> Style<'a> {
        Style {
            size,
            anchor: Anchor::Start,
            bold: false,
            fill: None,
            class: None,
        }
    }

    fn anchor(self, anchor: Anchor) -> Style<'a> {
        Style { anchor, ..self }
    }

    fn bold(self) -> Style<'a> {
        Style { bold: true, ..self }
    }

    fn fill(self, fill: &'a str) -> Style<'a> {
        Style {
            fill: Some(fill),
            ..self
        }
    }

    fn class(self, class: &'a str) -> Style<'a> {
        Style {
            class: Some(class),
            ..self
        }
    }

    fn width(&self, text: &str) -> f64 {
        text_width(text, self.size, self.bold)
    }
}

impl Canvas {
    fn new(font_size: f64) -> Canvas {
        Canvas {
            elements: Vec::new(),
            right: 0.0,
            bottom: 0.0,
            font_size,
        }
    }

    fn reach(&mut self, x: f64, y: f64) {
        self.right = self.right.max(x);
        self.bottom = self.bottom.max(y);
    }

    fn text(&mut self, x: f64, y: f64, style: Style<'_>, content: &str) {
        let width = style.width(content);
        let right = match style.anchor {
            Anchor::Start => x + width,
            Anchor::Middle => x + width / 2.0,
            Anchor::End => x,
        };
        // Descenders reach about a third of the size below the baseline.
        self.reach(right, y + style.size / 3.0);
        let mut element = format!("<text x=\"{x:.1}\" y=\"{y:.1}\"");
        if style.size != self.font_size {
            let _ = write!(element, " font-size=\"{}\"", style.size);
        }
        element.push_str(style.anchor.attribute());
        if style.bold {
            element.push_str(" font-weight=\"bold\"");
        }
        if let Some(fill) = style.fill {
            let _ = write!(element, " fill=\"{fill}\"");
        }
        if let Some(class) = style.class {
            let _ = write!(element, " class=\"{class}\"");
        }
        let _ = write!(element, ">{}</text>", escape(content));
        self.elements.push(element);
    }

    /// `text` in lines of at most `max_width` px (a word wider than that
    /// gets a line of its own), the first baseline at `y`; the baseline
    /// after the last line.
    fn paragraph(&mut self, x: f64, y: f64, style: Style<'_>, text: &str, max_width: f64) -> f64 {
        let mut y = y;
        for line in wrap(text, style, max_width) {
            self.text(x, y, style, &line);
            y += style.size * 1.3;
        }
        y
    }

    fn rect(&mut self, x: f64, y: f64, width: f64, height: f64, fill: &str, tip: Option<&str>) {
        self.reach(x + width, y + height);
        let mut element = format!(
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"{height:.1}\" fill=\"{fill}\""
        );
        match tip {
            Some(tip) => {
                let _ = write!(element, "><title>{}</title></rect>", escape(tip));
            }
            None => element.push_str("/>"),
        }
        self.elements.push(element);
    }

    fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str) {
        self.reach(x1.max(x2), y1.max(y2));
        self.elements.push(format!(
            "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"{stroke}\"/>"
        ));
    }

    /// The SVG document, `margin` px wider and taller than what was drawn.
    fn finish(self, margin: f64) -> String {
        let width = (self.right + margin).ceil();
        let height = (self.bottom + margin).ceil();
        let mut out = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
             font-family=\"sans-serif\" font-size=\"{}\">\n",
            self.font_size
        );
        out.push_str(&format!(
            "<rect width=\"{width}\" height=\"{height}\" fill=\"white\"/>\n"
        ));
        for element in self.elements {
            out.push_str(&element);
            out.push('\n');
        }
        out.push_str("</svg>\n");
        out
    }
}

/// Splits `text` at spaces into lines no wider than `max_width` as `style`
/// measures them; a word wider than that is a line by itself.
fn wrap(text: &str, style: Style<'_>, max_width: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let candidate = if current.is_empty() {
            word.to_owned()
        } else {
            format!("{current} {word}")
        };
        if current.is_empty() || style.width(&candidate) <= max_width {
            current = candidate;
        } else {
            lines.push(std::mem::replace(&mut current, word.to_owned()));
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

/// The narrowest a chart's titles are wrapped to.
const MIN_TEXT_WIDTH: f64 = 320.0;

/// Colours for the arms compared with a stock one, in the order they come.
const PALETTE: [&str; 8] = [
    "#2b7bb9", "#8fc1e3", "#e07b39", "#b8442c", "#4c9a4c", "#8e5ea2", "#c9a227", "#17becf",
];

/// Colours for stock arms.
const GREYS: [&str; 3] = ["#b0b0b0", "#d0d0d0", "#909090"];

/// The colour of a reference arm (the floor).
const REFERENCE: &str = "#555555";

/// What an arm is to the others on the chart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Its own baseline, with other arms compared with it.
    Stock,
    /// Its own baseline, with nothing compared with it: the floor.
    Reference,
    /// Compared with a stock arm.
    Compared,
}

/// One colour per arm, in `roles` order: stock arms grey, the reference
/// dark grey, the others from [`PALETTE`]; past the end of a list the
/// colours repeat.
fn colours(roles: &[Role]) -> Vec<&'static str> {
    let (mut stock, mut other) = (0, 0);
    roles
        .iter()
        .map(|role| match role {
            Role::Stock => {
                stock += 1;
                GREYS[(stock - 1) % GREYS.len()]
            }
            Role::Reference => REFERENCE,
            Role::Compared => {
                other += 1;
                PALETTE[(other - 1) % PALETTE.len()]
            }
        })
        .collect()
}

fn number(value: &Value) -> Option<f64> {
    value.as_f64().filter(|v| v.is_finite())
}

fn settings_text(doc: &Value, key: &str) -> String {
    match &doc["settings"][key] {
        Value::Null => "?".into(),
        value => value.to_string(),
    }
}

/// The chart of the default run's JSON: server CPU per stream of every arm
/// at every concurrency level, streams/s under each bar, one legend entry
/// per arm. With `only`, just the arms with those keys, in the document's
/// order.
pub fn bench_chart(doc: &Value, only: Option<&[String]>) -> Result<String, String> {
    struct Bar {
        cpu: f64,
        rate: Option<f64>,
    }
    let all = doc["arms"]
        .as_array()
        .ok_or("no \"arms\" list: not the JSON of the default run")?;
    let arms: Vec<&Value> = all
        .iter()
        .filter(|arm| only.is_none_or(|keys| keys.iter().any(|k| arm["arm"].as_str() == Some(k))))
        .collect();
    if arms.is_empty() {
        return Err("no arm to draw".into());
    }
    let keys: Vec<String> = arms
        .iter()
        .map(|arm| arm["arm"].as_str().unwrap_or("?").to_owned())
        .collect();
    let roles: Vec<Role> = arms
        .iter()
        .zip(&keys)
        .map(|(arm, key)| {
            if arm["baseline"].as_str() == Some(key.as_str()) {
                Role::Stock
            } else {
                Role::Compared
            }
        })
        .collect();
    let colours = colours(&roles);
    let mut levels: Vec<u64> = arms
        .iter()
        .flat_map(|arm| arm["server_streaming"].as_array().into_iter().flatten())
        .filter_map(|row| row["streams"].as_u64())
        .collect();
    levels.sort_unstable();
    levels.dedup();
    let bar = |arm: &Value, level: u64| -> Option<Bar> {
        let row = arm["server_streaming"]
            .as_array()?
            .iter()
            .find(|row| row["streams"].as_u64() == Some(level))?;
        Some(Bar {
            cpu: number(&row["result"]["median_server_cpu_us"])?,
            rate: number(&row["result"]["median_rate"]),
        })
    };
    let peak = arms
        .iter()
        .flat_map(|arm| levels.iter().filter_map(|&level| bar(arm, level)))
        .map(|b| b.cpu)
        .fold(0.0, f64::max);
    if peak <= 0.0 {
        return Err("no server CPU figure to draw".into());
    }

    let value_style = Style::new(12.0).anchor(Anchor::Middle);
    let rate_style = Style::new(10.0).anchor(Anchor::Middle);
    let level_style = Style::new(12.0).anchor(Anchor::Middle).bold();
    // A bar is at least as wide as the numbers over and under it.
    let mut slot: f64 = 46.0;
    for arm in &arms {
        for &level in &levels {
            if let Some(b) = bar(arm, level) {
                slot = slot.max(value_style.width(&format!("{:.0}", b.cpu)));
                if let Some(rate) = b.rate {
                    slot = slot.max(rate_style.width(&format!("{rate:.0}/s")));
                }
            }
        }
    }
    let (bar_w, gap) = (slot, 8.0);
    let bars_w = arms.len() as f64 * (bar_w + gap) - gap;
    let group_w = levels
        .iter()
        .map(|level| level_style.width(&format!("{level} streams in flight")))
        .fold(bars_w, f64::max);
    let (left, plot_h, group_gap) = (20.0, 260.0, 40.0);
    let axis_right = left + levels.len() as f64 * (group_w + group_gap) - group_gap;
    let legend_style = Style::new(12.0).class("legend");
    let legend_x = axis_right + 30.0;
    let legend_right = arms
        .iter()
        .zip(&keys)
        .map(|(arm, key)| {
            legend_x + 18.0 + legend_style.width(arm["label"].as_str().unwrap_or(key))
        })
        .fold(legend_x, f64::max);
    let text_width = (legend_right - left).max(MIN_TEXT_WIDTH);

    let mut canvas = Canvas::new(12.0);
    let y = canvas.paragraph(
        left,
        24.0,
        Style::new(15.0).bold(),
        "server CPU per stream (µs, lower is better)",
        text_width,
    );
    let y = canvas.paragraph(
        left,
        y,
        Style::new(11.0).fill("#555"),
        "each bar: one arm's median server CPU per stream; under it: streams/s",
        text_width,
    );
    // Room for the value over the tallest bar.
    let top = y + 16.0;
    let base = top + plot_h;
    canvas.line(left, base, axis_right, base, "#333");
    for (gi, &level) in levels.iter().enumerate() {
        let gx = left + gi as f64 * (group_w + group_gap);
        let bars_x = gx + (group_w - bars_w) / 2.0;
        for (ai, arm) in arms.iter().enumerate() {
            let Some(b) = bar(arm, level) else { continue };
            let h = plot_h * b.cpu / peak;
            let x = bars_x + ai as f64 * (bar_w + gap);
            let tip = format!(
                "{}, {level} streams in flight: {:.1} µs per stream",
                arm["label"].as_str().unwrap_or(&keys[ai]),
                b.cpu
            );
            canvas.rect(x, base - h, bar_w, h, colours[ai], Some(&tip));
            canvas.text(
                x + bar_w / 2.0,
                base - h - 4.0,
                value_style,
                &format!("{:.0}", b.cpu),
            );
            if let Some(rate) = b.rate {
                canvas.text(
                    x + bar_w / 2.0,
                    base + 14.0,
                    rate_style,
                    &format!("{rate:.0}/s"),
                );
            }
        }
        canvas.text(
            gx + group_w / 2.0,
            base + 34.0,
            level_style,
            &format!("{level} streams in flight"),
        );
    }
    for (ai, arm) in arms.iter().enumerate() {
        let y = top + ai as f64 * 20.0;
        canvas.rect(legend_x, y, 12.0, 12.0, colours[ai], None);
        let label = arm["label"].as_str().unwrap_or(&keys[ai]);
        canvas.text(legend_x + 18.0, y + 11.0, legend_style, label);
    }
    let legend_bottom = top + arms.len() as f64 * 20.0;
    canvas.paragraph(
        left,
        (base + 62.0).max(legend_bottom + 20.0),
        Style::new(10.0).fill("#555"),
        &format!(
            "e2e-bench: median of {} rounds, {} s windows",
            settings_text(doc, "rounds"),
            settings_text(doc, "window_s")
        ),
        text_width,
    );
    Ok(canvas.finish(20.0))
}

/// One bar group of the matrix chart: a section's shape.
struct Group {
    section: String,
    count: u64,
    size: u64,
    label: Vec<String>,
}

/// One panel of the matrix chart: the arms compared with one stock arm,
/// plus the arms that are compared with nothing but themselves (the floor),
/// which every panel shows as its reference.
struct Panel {
    title: String,
    arms: Vec<String>,
    /// One per arm, in the same order.
    roles: Vec<Role>,
}

fn shape_lines(cell: &Value) -> Vec<String> {
    let count = cell["count"].as_u64().unwrap_or(0);
    let size = cell["size"].as_u64().unwrap_or(0);
    let mut lines = vec![
        format!("{count} ×"),
        size_label(u32::try_from(size).unwrap_or(u32::MAX)),
    ];
    if cell["client_stream"].as_bool() == Some(true) {
        lines.insert(0, "client stream".into());
    }
    if cell["call"].as_str() == Some("unary") {
        lines.remove(0);
        lines.insert(0, "unary".into());
    }
    if let Some(encoding) = cell["compression"].as_str() {
        lines.push(encoding.into());
    }
    if let Some(pace) = cell["pace_micros"].as_u64().filter(|&p| p > 0) {
        lines.push(format!("every {pace} µs"));
    }
    match cell["section"].as_str() {
        Some("matrix") | Some("compressed") | Some("paced") | Some("unary") | Some("large")
        | None => {}
        Some(section) => lines.push(section.into()),
    }
    lines
}

fn stack_title(key: &str) -> String {
    match MatrixArm::from_key(key).map(|arm| arm.stack) {
        Some(Stack::Volo) => "volo-grpc".into(),
        Some(Stack::Tonic) => "tonic (full framing)".into(),
        Some(Stack::Bare) => "bare hyper".into(),
        None => format!("compared with {key}"),
    }
}

/// The arms grouped by the stock arm they are compared with (following
/// baselines to the end), in the order the document has them.
fn panels(cells: &[&Value]) -> Vec<Panel> {
    let mut baselines: Vec<(String, String)> = Vec::new();
    for cell in cells {
        let (Some(arm), Some(baseline)) = (cell["arm"].as_str(), cell["baseline"].as_str()) else {
            continue;
        };
        if !baselines.iter().any(|(a, _)| a == arm) {
            baselines.push((arm.to_owned(), baseline.to_owned()));
        }
    }
    let root = |arm: &str| {
        let mut at = arm.to_owned();
        // A baseline chain is short; the bound only stops a cycle.
        for _ in 0..baselines.len() {
            match baselines.iter().find(|(a, _)| *a == at) {
                Some((_, b)) if *b != at => at = b.clone(),
                _ => break,
            }
        }
        at
    };
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for (arm, _) in &baselines {
        let r = root(arm);
        match groups.iter_mut().find(|(key, _)| *key == r) {
            Some((_, members)) => members.push(arm.clone()),
            None => groups.push((r, vec![arm.clone()])),
        }
    }
    // A group of one arm that is its own baseline has nothing to compare:
    // it is a reference (the floor) and goes into every other panel.
    let (references, compared): (Vec<_>, Vec<_>) = groups
        .into_iter()
        .partition(|(root, members)| members.len() == 1 && members[0] == *root);
    let references: Vec<String> = references.into_iter().map(|(r, _)| r).collect();
    if compared.is_empty() {
        return vec![Panel {
            title: "reference arms".into(),
            roles: vec![Role::Reference; references.len()],
            arms: references,
        }];
    }
    compared
        .into_iter()
        .map(|(root, mut arms)| {
            let mut roles: Vec<Role> = arms
                .iter()
                .map(|arm| {
                    if *arm == root {
                        Role::Stock
                    } else {
                        Role::Compared
                    }
                })
                .collect();
            roles.extend(references.iter().map(|_| Role::Reference));
            arms.extend(references.iter().cloned());
            Panel {
                title: stack_title(&root),
                arms,
                roles,
            }
        })
        .collect()
}

/// The chart of `--matrix`'s JSON: server CPU per message (log scale) of
/// every arm for every section and shape, one panel per stock arm with the
/// arms compared with it and the floor, DATA frames per stream under each
/// group. Cells without a result (a failed cell) leave their bar out.
pub fn matrix_chart(doc: &Value) -> Result<String, String> {
    let cells: Vec<&Value> = doc["cells"]
        .as_array()
        .ok_or("no \"cells\" list: not the JSON of --matrix")?
        .iter()
        .collect();
    let value_of = |cell: &Value| number(&cell["representative"]["server_us_per_message"]);
    let frames_of = |cell: &Value| number(&cell["representative"]["frames_per_stream"]);
    let values: Vec<f64> = cells
        .iter()
        .filter_map(|c| value_of(c))
        .filter(|v| *v > 0.0)
        .collect();
    if values.is_empty() {
        return Err("no matrix cell with a result".into());
    }
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(0.0, f64::max);
    // The axis runs over whole decades, kept as exponents so the labels
    // print exactly.
    let lo_exp = min.log10().floor() as i32;
    let hi_exp = (max.log10().ceil() as i32).max(lo_exp + 1);
    let (lo, hi) = (10f64.powi(lo_exp), 10f64.powi(hi_exp));

    let mut groups: Vec<Group> = Vec::new();
    for cell in &cells {
        let section = cell["section"].as_str().unwrap_or("?").to_owned();
        let count = cell["count"].as_u64().unwrap_or(0);
        let size = cell["size"].as_u64().unwrap_or(0);
        let label = shape_lines(cell);
        if !groups
            .iter()
            .any(|g| g.section == section && g.count == count && g.size == size && g.label == label)
        {
            groups.push(Group {
                section,
                count,
                size,
                label,
            });
        }
    }
    let find = |group: &Group, arm: &str| {
        cells.iter().copied().find(|c| {
            c["arm"].as_str() == Some(arm)
                && c["section"].as_str() == Some(group.section.as_str())
                && c["count"].as_u64() == Some(group.count)
                && c["size"].as_u64() == Some(group.size)
                && shape_lines(c) == group.label
        })
    };
    let panels = panels(&cells);

    let label_style = Style::new(9.0).anchor(Anchor::Middle);
    let frames_style = Style::new(8.0).anchor(Anchor::Middle).fill("#555");
    let (bar_w, gap, group_gap) = (11.0, 1.0, 12.0);
    let most_bars = panels.iter().map(|p| p.arms.len()).max().unwrap_or(1);
    let bars_w = most_bars as f64 * (bar_w + gap) - gap;
    let mut group_w = bars_w;
    for group in &groups {
        for line in &group.label {
            group_w = group_w.max(label_style.width(line));
        }
        for panel in &panels {
            for arm in &panel.arms {
                if let Some(frames) = find(group, arm).and_then(frames_of) {
                    group_w = group_w.max(frames_style.width(&format!("{frames:.0}")));
                }
            }
        }
    }
    let left = 60.0;
    let axis_right = left + 6.0 + groups.len() as f64 * (group_w + group_gap);
    let plot_h = 220.0;
    let label_lines = groups.iter().map(|g| g.label.len()).max().unwrap_or(2);
    let below = 10.0 * label_lines as f64 + 9.0 * most_bars as f64 + 16.0;

    let text_width = (axis_right - left).max(MIN_TEXT_WIDTH);
    let mut canvas = Canvas::new(11.0);
    let y = canvas.paragraph(
        left,
        22.0,
        Style::new(15.0).bold(),
        "server CPU per message (µs, log scale, lower is better)",
        text_width,
    );
    let y = canvas.paragraph(
        left,
        y,
        Style::new(11.0).fill("#555"),
        "under each group: its shape (messages × size), then the DATA frames per stream of its bars, left to right",
        text_width,
    );
    let y_of = |value: f64, top: f64| {
        let frac = (value.log10() - lo.log10()) / (hi.log10() - lo.log10());
        top + plot_h - plot_h * frac
    };
    let mut top = y;
    for panel in &panels {
        // Colours by place within the panel, so the same kind of arm looks
        // the same in every panel.
        let palette = colours(&panel.roles);
        let colour_of = |arm: &str| {
            panel
                .arms
                .iter()
                .position(|a| a == arm)
                .map_or("#888", |i| palette[i])
        };
        canvas.text(left, top + 12.0, Style::new(12.0).bold(), &panel.title);
        let mut lx = left;
        for arm in &panel.arms {
            canvas.rect(lx, top + 20.0, 10.0, 10.0, colour_of(arm), None);
            let style = Style::new(11.0).class("legend");
            canvas.text(lx + 14.0, top + 29.0, style, arm);
            lx += 14.0 + style.width(arm) + 18.0;
        }
        let plot_top = top + 40.0;
        for exp in lo_exp..=hi_exp {
            let y = y_of(10f64.powi(exp), plot_top);
            canvas.line(left, y, axis_right, y, "#ddd");
            let label = match u32::try_from(exp) {
                Ok(exp) => 10u64.pow(exp).to_string(),
                Err(_) => format!("{:.*}", exp.unsigned_abs() as usize, 10f64.powi(exp)),
            };
            canvas.text(
                left - 6.0,
                y + 4.0,
                Style::new(11.0).anchor(Anchor::End),
                &label,
            );
        }
        let base = plot_top + plot_h;
        for (gi, group) in groups.iter().enumerate() {
            let gx = left + 6.0 + gi as f64 * (group_w + group_gap);
            let present: Vec<(&String, &Value)> = panel
                .arms
                .iter()
                .filter_map(|arm| find(group, arm).map(|cell| (arm, cell)))
                .collect();
            let width = present.len() as f64 * (bar_w + gap) - gap;
            let bars_x = gx + (group_w - width) / 2.0;
            let mut frames = Vec::new();
            for (ai, (arm, cell)) in present.iter().enumerate() {
                let Some(value) = value_of(cell).filter(|v| *v > 0.0) else {
                    frames.push("-".to_owned());
                    continue;
                };
                let y = y_of(value, plot_top);
                let x = bars_x + ai as f64 * (bar_w + gap);
                let tip = format!("{arm} {}: {value:.2} µs per message", group.label.join(" "));
                canvas.rect(x, y, bar_w, base - y, colour_of(arm), Some(&tip));
                frames.push(frames_of(cell).map_or("-".into(), |f| format!("{f:.0}")));
            }
            let cx = gx + group_w / 2.0;
            let mut y = base + 11.0;
            for line in &group.label {
                canvas.text(cx, y, label_style, line);
                y += 10.0;
            }
            for frames in frames {
                canvas.text(cx, y, frames_style, &frames);
                y += 9.0;
            }
        }
        top = base + below;
    }
    canvas.paragraph(
        left,
        top + 4.0,
        Style::new(10.0).fill("#555"),
        &format!(
            "e2e-bench --matrix: median round of {}, {} s windows per cell, raw HTTP/2 client",
            settings_text(doc, "rounds"),
            settings_text(doc, "window_s")
        ),
        text_width,
    );
    Ok(canvas.finish(20.0))
}

/// The chart of either kind of document: `--matrix`'s (with `cells`) or
/// the default run's (with `arms`, restricted to `only` when given).
pub fn chart(doc: &Value, only: Option<&[String]>) -> Result<String, String> {
    if doc.get("cells").is_some() {
        matrix_chart(doc)
    } else {
        bench_chart(doc, only)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A `<text>` of a chart, read back from the SVG.
    #[derive(Debug)]
    struct ParsedText {
        x: f64,
        size: f64,
        anchor: Anchor,
        bold: bool,
        class: Option<String>,
        content: String,
    }

    fn attribute<'a>(element: &'a str, name: &str) -> Option<&'a str> {
        let start = element.find(&format!(" {name}=\""))? + name.len() + 3;
        let end = element[start..].find('"')? + start;
        Some(&element[start..end])
    }

    fn unescape(text: &str) -> String {
        text.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
    }

    /// The width attribute of the `<svg>` and its texts.
    fn parse(svg: &str) -> (f64, Vec<ParsedText>) {
        let root = svg.lines().next().unwrap();
        assert!(root.starts_with("<svg "), "{root}");
        let width: f64 = attribute(root, "width").unwrap().parse().unwrap();
        let default_size: f64 = attribute(root, "font-size").unwrap().parse().unwrap();
        let texts = svg
            .lines()
            .filter(|line| line.starts_with("<text "))
            .map(|line| {
                let open_end = line.find('>').unwrap();
                let open = &line[..open_end];
                let content = &line[open_end + 1..line.rfind("</text>").unwrap()];
                ParsedText {
                    x: attribute(open, "x").unwrap().parse().unwrap(),
                    size: attribute(open, "font-size").map_or(default_size, |s| s.parse().unwrap()),
                    anchor: match attribute(open, "text-anchor") {
                        Some("middle") => Anchor::Middle,
                        Some("end") => Anchor::End,
                        _ => Anchor::Start,
                    },
                    bold: attribute(open, "font-weight") == Some("bold"),
                    class: attribute(open, "class").map(str::to_owned),
                    content: unescape(content),
                }
            })
            .collect();
        (width, texts)
    }

    /// Every text lies inside the canvas, measured independently of how the
    /// chart placed it.
    fn assert_texts_fit(svg: &str) {
        let (width, texts) = parse(svg);
        assert!(!texts.is_empty());
        for text in &texts {
            let w = text_width(&text.content, text.size, text.bold);
            let (from, to) = match text.anchor {
                Anchor::Start => (text.x, text.x + w),
                Anchor::Middle => (text.x - w / 2.0, text.x + w / 2.0),
                Anchor::End => (text.x - w, text.x),
            };
            assert!(from >= 0.0, "{text:?} starts left of the canvas");
            assert!(
                to <= width,
                "{text:?} ends at {to:.1}, past the width {width}"
            );
        }
    }

    fn legend(svg: &str) -> Vec<String> {
        parse(svg)
            .1
            .into_iter()
            .filter(|t| t.class.as_deref() == Some("legend"))
            .map(|t| t.content)
            .collect()
    }

    fn bench_arm(key: &str, label: &str, baseline: &str, cpu: f64) -> Value {
        json!({
            "arm": key,
            "label": label,
            "baseline": baseline,
            "server_streaming": [
                {"streams": 32, "result": {"median_rate": 40000.0, "median_server_cpu_us": cpu}},
                {"streams": 128, "result": {"median_rate": 45000.0, "median_server_cpu_us": cpu * 0.9}},
            ],
        })
    }

    fn bench_doc(arms: Vec<Value>) -> Value {
        json!({"settings": {"rounds": 3, "window_s": 3.0}, "arms": arms})
    }

    fn matrix_cell(section: &str, arm: &str, baseline: &str, count: u64, size: u64) -> Value {
        json!({
            "section": section, "arm": arm, "baseline": baseline,
            "size": size, "count": count, "compression": null, "pace_micros": 0,
            "client_stream": false, "concurrency": 16, "server_quota": null, "error": null,
            "representative": {
                "server_us_per_message": 1.5 * (size as f64).sqrt(),
                "frames_per_stream": count as f64 + 1.0,
            },
        })
    }

    fn docs_json(name: &str) -> Value {
        let path = crate::workspace_root().join("docs").join(name);
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn width_holds_a_long_legend_label_and_title() {
        let long =
            "an arm with a label far longer than any legend column was ever sized for, WWWWWWWW";
        let doc = bench_doc(vec![
            bench_arm("s", "stock", "s", 20.0),
            bench_arm("x", long, "s", 10.0),
        ]);
        let svg = bench_chart(&doc, None).unwrap();
        assert_texts_fit(&svg);
        let (width, _) = parse(&svg);
        assert!(width >= text_width(long, 12.0, false), "{width}");
    }

    #[test]
    fn bench_legend_is_the_documents_arms_in_order() {
        let doc = bench_doc(vec![
            bench_arm("a", "arm a", "a", 20.0),
            bench_arm("b", "arm b", "a", 10.0),
            bench_arm("new-arm", "an arm no list here knows", "a", 5.0),
        ]);
        let svg = bench_chart(&doc, None).unwrap();
        assert_eq!(
            legend(&svg),
            ["arm a", "arm b", "an arm no list here knows"]
        );
        let only = ["b".to_owned()];
        let svg = bench_chart(&doc, Some(&only)).unwrap();
        assert_eq!(legend(&svg), ["arm b"]);
    }

    #[test]
    fn bench_bars_follow_the_numbers() {
        let doc = bench_doc(vec![
            bench_arm("a", "arm a", "a", 20.0),
            bench_arm("b", "arm b", "a", 10.0),
        ]);
        let svg = bench_chart(&doc, None).unwrap();
        let heights: Vec<f64> = svg
            .lines()
            .filter(|l| l.starts_with("<rect ") && l.contains("<title>"))
            .map(|l| attribute(l, "height").unwrap().parse().unwrap())
            .collect();
        // Arm a at 32 and 128 streams, then arm b: 20, 18, 10, 9 µs.
        assert_eq!(heights.len(), 4, "{svg}");
        let by_level = [heights[0], heights[2], heights[1], heights[3]];
        let expected = [20.0, 18.0, 10.0, 9.0];
        for (h, v) in by_level.iter().zip(expected) {
            assert!((h / by_level[0] - v / 20.0).abs() < 1e-3, "{heights:?}");
        }
        for figure in ["20", "18", "10", "9"] {
            assert!(
                svg.contains(&format!(">{figure}</text>")),
                "{figure}: {svg}"
            );
        }
    }

    #[test]
    fn a_distinct_colour_for_every_arm_of_a_panel() {
        let roles = [
            Role::Stock,
            Role::Compared,
            Role::Compared,
            Role::Stock,
            Role::Compared,
            Role::Reference,
        ];
        let colours = colours(&roles);
        for (i, a) in colours.iter().enumerate() {
            assert!(!colours[i + 1..].contains(a), "{colours:?}");
        }
    }

    #[test]
    fn matrix_panels_come_from_the_baselines_and_the_floor_is_in_each() {
        let mut cells = Vec::new();
        for (count, size) in [(16, 64), (256, 4096)] {
            for (arm, baseline) in [
                ("volo-batched", "volo-stock"),
                ("volo-stock", "volo-stock"),
                ("tonic-full-batched", "tonic-stock"),
                ("tonic-stock", "tonic-stock"),
                ("some-new-stack-batched", "some-new-stack-stock"),
                ("bare-hyper", "bare-hyper"),
            ] {
                cells.push(matrix_cell("matrix", arm, baseline, count, size));
            }
        }
        let doc = json!({"settings": {"rounds": 1, "window_s": 1.0}, "cells": cells});
        let svg = matrix_chart(&doc).unwrap();
        assert_texts_fit(&svg);
        assert_eq!(
            legend(&svg),
            [
                "volo-batched",
                "volo-stock",
                "bare-hyper",
                "tonic-full-batched",
                "tonic-stock",
                "bare-hyper",
                "some-new-stack-batched",
                "bare-hyper",
            ]
        );
        let texts: Vec<String> = parse(&svg).1.into_iter().map(|t| t.content).collect();
        for title in [
            "volo-grpc",
            "tonic (full framing)",
            "compared with some-new-stack-stock",
        ] {
            assert!(texts.iter().any(|t| t == title), "{title}: {texts:?}");
        }
    }

    #[test]
    fn the_docs_charts_show_every_arm_of_their_json_and_fit() {
        let bench = docs_json("e2e-bench.json");
        let svg = bench_chart(&bench, None).unwrap();
        assert_texts_fit(&svg);
        let labels: Vec<String> = bench["arms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["label"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(legend(&svg), labels);

        let matrix = docs_json("e2e-matrix.json");
        let svg = matrix_chart(&matrix).unwrap();
        assert_texts_fit(&svg);
        let shown = legend(&svg);
        for cell in matrix["cells"].as_array().unwrap() {
            let arm = cell["arm"].as_str().unwrap();
            assert!(shown.iter().any(|s| s == arm), "{arm} not in {shown:?}");
        }
    }

    #[test]
    fn wrapped_lines_fit_and_keep_every_word() {
        let style = Style::new(11.0);
        let text = "under each group: its shape, then the DATA frames per stream of its bars";
        let lines = wrap(text, style, 150.0);
        assert!(lines.len() > 1, "{lines:?}");
        for line in &lines {
            assert!(style.width(line) <= 150.0, "{line:?}");
        }
        assert_eq!(lines.join(" "), text);
        // A word wider than the limit is kept whole on a line of its own.
        let lines = wrap("a averyveryverylongword b", style, 40.0);
        assert_eq!(lines, ["a", "averyveryverylongword", "b"]);
    }

    #[test]
    fn a_small_matrix_wraps_its_titles_to_its_plot() {
        let cells = vec![
            matrix_cell("matrix", "tonic-full-batched", "tonic-stock", 16, 256),
            matrix_cell("matrix", "tonic-stock", "tonic-stock", 16, 256),
        ];
        let doc = json!({"settings": {"rounds": 1, "window_s": 1.0}, "cells": cells});
        let svg = matrix_chart(&doc).unwrap();
        assert_texts_fit(&svg);
        let (width, _) = parse(&svg);
        assert!(width <= 60.0 + MIN_TEXT_WIDTH + 40.0, "{width}: {svg}");
    }

    #[test]
    fn measured_widths_order_as_glyphs_do() {
        assert!(text_width("WWW", 12.0, false) > text_width("iii", 12.0, false));
        assert!(text_width("abc", 12.0, true) > text_width("abc", 12.0, false));
        assert!(text_width("abc", 24.0, false) > text_width("abc", 12.0, false));
        // DejaVu Sans, the widest common default: 'm' is 0.974 em, '0' 0.636.
        assert!(text_width("m", 10.0, false) >= 9.74);
        assert!(text_width("0", 10.0, false) >= 6.36);
    }
}
