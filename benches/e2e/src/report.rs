//! The results tables, the raw JSON and its chart, and how paths are shown.

use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use crate::Settings;
use crate::arms::Arm;
use crate::measure::median;
use crate::workload::{ArmResults, Sample};

fn medians(samples: &[Sample]) -> (f64, f64) {
    (
        median(samples.iter().map(|s| s.rate).collect()),
        median(samples.iter().map(|s| s.server_cpu_us).collect()),
    )
}

/// Median server and client CPU-seconds per second.
fn cpu_shares(samples: &[Sample]) -> (f64, f64) {
    (
        median(samples.iter().map(|s| s.server_share).collect()),
        median(samples.iter().map(|s| s.client_share).collect()),
    )
}

fn find(results: &[ArmResults], arm: Arm) -> Option<&ArmResults> {
    results.iter().find(|result| result.arm == arm)
}

/// The median over rounds of the baseline's server CPU divided by the
/// arm's, each round against the same round: arms run next to each other
/// in every round, so what drifts between rounds (the machine's load, its
/// caches) divides out, where a ratio of two medians keeps it.
fn paired_ratio(samples: &[Sample], baseline: Option<&[Sample]>) -> String {
    let Some(baseline) = baseline else {
        return "-".into();
    };
    let ratios: Vec<f64> = samples
        .iter()
        .zip(baseline)
        .map(|(arm, base)| base.server_cpu_us / arm.server_cpu_us)
        .filter(|ratio| ratio.is_finite())
        .collect();
    if ratios.is_empty() {
        return "-".into();
    }
    format!("{:.3}x", median(ratios))
}

/// The server-CPU columns both tables end with.
const CPU_HEADER: [&str; 5] = [
    "server µs/str",
    "ratio",
    "paired",
    "server CPU",
    "client CPU",
];

/// An arm's cells under [`CPU_HEADER`]: its median server CPU per stream
/// `cpu`, against its baseline's `base_cpu` and round by round.
fn cpu_cells(
    samples: &[Sample],
    cpu: f64,
    base_cpu: f64,
    base_samples: Option<&[Sample]>,
) -> [String; 5] {
    let (server_share, client_share) = cpu_shares(samples);
    [
        format!("{cpu:.1}"),
        ratio(base_cpu, cpu),
        paired_ratio(samples, base_samples),
        format!("{server_share:.2}"),
        format!("{client_share:.2}"),
    ]
}

fn ratio(value: f64, baseline: f64) -> String {
    if baseline.is_finite() && baseline > 0.0 && value.is_finite() {
        format!("{:.2}x", value / baseline)
    } else {
        "-".into()
    }
}

/// Prints `rows` under `header` in columns as wide as their widest cell,
/// the first `left` columns aligned left and the rest (numbers) right.
pub fn print_columns(header: &[&str], rows: &[Vec<String>], left: usize) {
    for line in columns(header, rows, left) {
        println!("{line}");
    }
}

/// The lines [`print_columns`] prints, without trailing spaces.
pub fn columns(header: &[&str], rows: &[Vec<String>], left: usize) -> Vec<String> {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .filter_map(|row| row.get(i))
                .map(|cell| cell.chars().count())
                .chain([header[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::new();
        for (i, cell) in cells.enumerate() {
            let pad = " ".repeat(
                widths
                    .get(i)
                    .map_or(0, |w| w.saturating_sub(cell.chars().count())),
            );
            if i > 0 {
                out.push_str("  ");
            }
            if i < left {
                out.push_str(cell);
                out.push_str(&pad);
            } else {
                out.push_str(&pad);
                out.push_str(cell);
            }
        }
        out.trim_end().to_owned()
    };
    let mut lines = vec![line(&mut header.iter().copied())];
    for row in rows {
        lines.push(line(&mut row.iter().map(String::as_str)));
    }
    lines
}

/// Prints the medians and each arm's ratio to its stock counterpart.
///
/// For streams/s a ratio above 1 is better; for CPU per stream the ratio is
/// stock divided by arm, so above 1 is better there too. `memory_streams`
/// is how many idle streams the memory rows held open.
pub fn print_table(results: &[ArmResults], memory_streams: usize) {
    let mut rows = Vec::new();
    for result in results {
        let baseline = find(results, result.arm.baseline());
        for (level, samples) in &result.streaming {
            let (rate, cpu) = medians(samples);
            let base_samples = baseline
                .and_then(|b| b.streaming.iter().find(|(l, _)| l == level))
                .map(|(_, s)| s.as_slice());
            let (base_rate, base_cpu) = base_samples.map_or((f64::NAN, f64::NAN), medians);
            let mut row = vec![
                result.arm.label().to_owned(),
                level.to_string(),
                format!("{rate:.0}"),
                ratio(rate, base_rate),
            ];
            row.extend(cpu_cells(samples, cpu, base_cpu, base_samples));
            rows.push(row);
        }
    }
    println!();
    let mut header = vec!["arm", "streams", "streams/s", "ratio"];
    header.extend(CPU_HEADER);
    print_columns(&header, &rows, 1);

    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|result| {
            let (micros, cpu) = medians(&result.client_streaming);
            let base_samples =
                find(results, result.arm.baseline()).map(|b| b.client_streaming.as_slice());
            let (base_micros, base_cpu) = base_samples.map_or((f64::NAN, f64::NAN), medians);
            let mut row = vec![
                result.arm.label().to_owned(),
                format!("{micros:.1}"),
                ratio(base_micros, micros),
            ];
            row.extend(cpu_cells(
                &result.client_streaming,
                cpu,
                base_cpu,
                base_samples,
            ));
            row
        })
        .collect();
    println!();
    let mut header = vec!["client-streaming (10 msgs)", "µs/stream", "ratio"];
    header.extend(CPU_HEADER);
    print_columns(&header, &rows, 1);

    let rows: Vec<Vec<String>> = results
        .iter()
        .filter_map(|result| {
            let memory = result.memory?;
            let live = memory
                .live_growth
                .map_or("n/a".to_string(), |bytes| format!("{:.1}", mib(bytes)));
            Some(vec![
                result.arm.label().to_owned(),
                format!("{:.1}", mib(memory.rss_growth)),
                live,
            ])
        })
        .collect();
    if !rows.is_empty() {
        println!();
        let what = format!("{memory_streams} idle streams after 1 MiB");
        print_columns(
            &[what.as_str(), "RSS growth MiB", "live growth MiB"],
            &rows,
            1,
        );
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn samples_json(samples: &[Sample]) -> Value {
    let (rate, cpu) = medians(samples);
    let (server_share, client_share) = cpu_shares(samples);
    json!({
        "median_rate": rate,
        "median_server_cpu_us": cpu,
        "median_server_cpu_share": server_share,
        "median_client_cpu_share": client_share,
        "samples": samples
            .iter()
            .map(|s| json!({
                "rate": s.rate,
                "server_cpu_us": s.server_cpu_us,
                "server_cpu_share": s.server_share,
                "client_cpu_share": s.client_share,
            }))
            .collect::<Vec<_>>(),
    })
}

/// Writes every sample and median as JSON, and its chart next to it (the
/// same path with `.svg`).
pub fn write_json(settings: &Settings, results: &[ArmResults]) {
    let arms: Vec<Value> = results
        .iter()
        .map(|result| {
            json!({
                "arm": result.arm.key(),
                "label": result.arm.label(),
                "baseline": result.arm.baseline().key(),
                "server_streaming": result
                    .streaming
                    .iter()
                    .map(|(level, samples)| json!({"streams": level, "result": samples_json(samples)}))
                    .collect::<Vec<_>>(),
                "client_streaming_us": samples_json(&result.client_streaming),
                "memory": result.memory.map(|m| json!({
                    "rss_growth_bytes": m.rss_growth,
                    "live_growth_bytes": m.live_growth,
                })),
            })
        })
        .collect();
    let document = json!({
        "settings": {
            "warmup_s": settings.warmup.as_secs_f64(),
            "window_s": settings.window.as_secs_f64(),
            "rounds": settings.rounds,
            "memory_streams": settings.memory_streams,
            "cpus": crate::measure::cpu_count(),
        },
        "arms": arms,
    });
    println!();
    write_document(&document, &settings.json, "raw results");
    write_chart(&document, &settings.json, None);
}

/// Writes `document` to `path` as pretty JSON and says where, as `what`.
pub fn write_document(document: &Value, path: &Path, what: &str) {
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    match serde_json::to_string_pretty(document) {
        Ok(text) => {
            write_file(path, &text, what);
        }
        Err(err) => eprintln!("could not serialise results: {err}"),
    }
}

/// Draws `document`'s chart ([`crate::chart::chart`]) into the `.svg` next
/// to `json_path`; the chart's path on success.
pub fn write_chart(document: &Value, json_path: &Path, only: Option<&[String]>) -> Option<PathBuf> {
    let svg_path = json_path.with_extension("svg");
    match crate::chart::chart(document, only) {
        Ok(svg) => write_file(&svg_path, &svg, "chart").then_some(svg_path),
        Err(err) => {
            eprintln!("no chart for {}: {err}", shown(json_path));
            None
        }
    }
}

/// Writes `text` to `path`, then prints `what: PATH` or the error; whether
/// it was written.
pub fn write_file(path: &Path, text: &str, what: &str) -> bool {
    match std::fs::write(path, text) {
        Ok(()) => {
            println!("{what}: {}", shown(path));
            true
        }
        Err(err) => {
            eprintln!("could not write {}: {err}", shown(path));
            false
        }
    }
}

/// `path` as a user would type it: relative to the current directory when
/// it is inside it, otherwise absolute, with no `..` or `.` steps either way.
pub fn shown(path: &Path) -> String {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let clean = std::fs::canonicalize(&absolute).unwrap_or_else(|_| normalize(&absolute));
    let here = std::env::current_dir()
        .ok()
        .and_then(|dir| std::fs::canonicalize(dir).ok());
    match here.as_deref().and_then(|dir| clean.strip_prefix(dir).ok()) {
        Some(relative) if !relative.as_os_str().is_empty() => relative.display().to_string(),
        _ => clean.display().to_string(),
    }
}

/// Drops `.` and resolves `..` textually (for a path that does not exist
/// yet, which `canonicalize` refuses).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(part);
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_hold_a_cell_longer_than_any_fixed_width() {
        let long = "tonic + grpc-stream-codec (full framing) with a much longer name";
        let rows = vec![
            vec!["stock".to_owned(), "32".to_owned(), "1.00x".to_owned()],
            vec![long.to_owned(), "128".to_owned(), "12.50x".to_owned()],
        ];
        let lines = columns(&["arm", "streams", "ratio"], &rows, 1);
        // Every column ends at the same character on every line.
        let ends = |line: &str| -> Vec<usize> {
            let chars: Vec<char> = line.chars().collect();
            (0..chars.len())
                .filter(|&i| chars[i] != ' ' && chars.get(i + 1).is_none_or(|c| *c == ' '))
                .collect()
        };
        let numbers: Vec<Vec<usize>> = lines.iter().map(|l| ends(l)).collect();
        let last_two = |e: &Vec<usize>| e[e.len() - 2..].to_vec();
        assert_eq!(last_two(&numbers[1]), last_two(&numbers[2]), "{lines:#?}");
        assert_eq!(last_two(&numbers[0]), last_two(&numbers[2]), "{lines:#?}");
        // The arm column starts every line and the long name is whole.
        assert!(lines[2].starts_with(long), "{lines:#?}");
        assert!(lines[1].starts_with("stock "), "{lines:#?}");
    }

    #[test]
    fn shown_paths_have_no_dot_steps_and_are_relative_inside_the_current_dir() {
        let here = std::fs::canonicalize(std::env::current_dir().unwrap()).unwrap();
        let inside = here.join("a/../b/./c.json");
        assert_eq!(shown(&inside), Path::new("b/c.json").display().to_string());
        let outside = here.join("../../x/../y.json");
        let expected = normalize(&here.join("../../y.json"));
        assert_eq!(shown(&outside), expected.display().to_string());
        assert!(!shown(&crate::workspace_root().join("target/e2e-bench.json")).contains(".."));
    }
}
