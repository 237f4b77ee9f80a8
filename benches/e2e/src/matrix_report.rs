//! The matrix's tables (console and Markdown) and raw JSON.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};

use crate::h2client::{Call, Shape, Windows};
use crate::matrix::{Cell, CellSample, MatrixArm, MatrixSettings, Section, Stack, Variant};

/// One cell's row: every metric from one representative round, the one
/// whose server CPU per message is the median (the upper middle for an even
/// number of rounds, so two rounds report the worse one), plus the range of
/// that metric over all rounds. Taking each metric's own median would mix
/// rounds within a row.
#[derive(Clone, Copy, Debug)]
struct Summary {
    messages_per_second: f64,
    server_us_per_message: f64,
    server_us_per_message_range: (f64, f64),
    server_us_per_stream: f64,
    frames_per_stream: f64,
    first_p50: f64,
    first_p99: f64,
    whole_p50: f64,
    whole_p99: f64,
    server_share: f64,
    client_share: f64,
    compressed_fraction: f64,
}

fn summary(cell: &Cell) -> Option<Summary> {
    let mut samples: Vec<&CellSample> = cell.samples.iter().collect();
    samples.sort_by(|a, b| {
        a.server_us_per_message()
            .total_cmp(&b.server_us_per_message())
    });
    let (first, last) = (samples.first()?, samples.last()?);
    let s = samples[samples.len() / 2];
    let count = cell.shape.count;
    Some(Summary {
        messages_per_second: s.messages_per_second(),
        server_us_per_message: s.server_us_per_message(),
        server_us_per_message_range: (first.server_us_per_message(), last.server_us_per_message()),
        server_us_per_stream: s.server_us_per_stream(count),
        frames_per_stream: s.frames_per_stream(count),
        first_p50: s.first_p50,
        first_p99: s.first_p99,
        whole_p50: s.whole_p50,
        whole_p99: s.whole_p99,
        server_share: s.cpu.server_share,
        client_share: s.cpu.client_share,
        compressed_fraction: s.compressed_messages as f64 / s.messages.max(1) as f64,
    })
}

fn find<'a>(
    cells: &'a [Cell],
    section: Section,
    shape: &Shape,
    arm: MatrixArm,
) -> Option<&'a Cell> {
    cells
        .iter()
        .find(|c| c.section == section && c.shape == *shape && c.arm == arm)
}

/// "256 B" / "4 KiB" / "1 MiB".
pub fn size_label(bytes: u32) -> String {
    const MIB: u32 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} B")
    }
}

fn shape_label(shape: &Shape) -> String {
    let mut label = format!("{} × {}", shape.count, size_label(shape.size));
    match shape.call {
        Call::ServerStream => {}
        Call::ClientStream => label.insert_str(0, "client stream "),
        Call::Unary => label = format!("unary {}", size_label(shape.size)),
    }
    let in_flight = crate::matrix::concurrency_for(shape, usize::MAX);
    if in_flight < 16 {
        let _ = write!(label, " ({in_flight} in flight)");
    }
    if let Some(encoding) = shape.compression {
        let _ = write!(label, " {}", encoding.name());
    }
    if shape.pace_micros > 0 {
        let _ = write!(label, " every {} µs", shape.pace_micros);
    }
    label
}

/// Server µs per message, with its range over the rounds when they differ.
fn per_message(s: &Summary) -> String {
    let (low, high) = s.server_us_per_message_range;
    if high > low {
        format!("{:.2} ({low:.2}–{high:.2})", s.server_us_per_message)
    } else {
        format!("{:.2}", s.server_us_per_message)
    }
}

fn ratio(baseline: f64, value: f64) -> String {
    if baseline.is_finite() && value.is_finite() && value > 0.0 {
        format!("{:.2}x", baseline / value)
    } else {
        "-".into()
    }
}

fn ms(micros: f64) -> String {
    if micros.is_finite() {
        format!("{:.2}", micros / 1000.0)
    } else {
        "-".into()
    }
}

const COLUMNS: usize = 13;

const HEADER: [&str; COLUMNS] = [
    "shape",
    "arm",
    "msgs/s",
    "server µs/msg",
    "server µs/stream",
    "vs stock",
    "DATA frames/stream",
    "first p50 ms",
    "first p99 ms",
    "stream p50 ms",
    "stream p99 ms",
    "server CPU",
    "client CPU",
];

/// One row per (shape, arm) of a section.
fn rows(cells: &[Cell], section: Section) -> Vec<[String; COLUMNS]> {
    let mut shapes: Vec<Shape> = Vec::new();
    for cell in cells.iter().filter(|c| c.section == section) {
        if !shapes.contains(&cell.shape) {
            shapes.push(cell.shape);
        }
    }
    let mut rows = Vec::new();
    for shape in &shapes {
        for cell in cells
            .iter()
            .filter(|c| c.section == section && c.shape == *shape)
        {
            let label = shape_label(shape);
            let Some(s) = summary(cell) else {
                let mut row: [String; COLUMNS] = Default::default();
                row[0] = label;
                row[1] = cell.arm.key().into();
                row[2] = format!("failed: {}", cell.error.as_deref().unwrap_or("no sample"));
                rows.push(row);
                continue;
            };
            let baseline = find(cells, section, shape, cell.arm.baseline())
                .and_then(summary)
                .map_or(f64::NAN, |b| b.server_us_per_message);
            let mut arm = cell.arm.key().to_owned();
            if shape.compression.is_some() && s.compressed_fraction < 1.0 {
                let _ = write!(arm, " ({:.0}% compressed)", s.compressed_fraction * 100.0);
            }
            rows.push([
                label,
                arm,
                format!("{:.0}", s.messages_per_second),
                per_message(&s),
                format!("{:.1}", s.server_us_per_stream),
                ratio(baseline, s.server_us_per_message),
                format!("{:.1}", s.frames_per_stream),
                ms(s.first_p50),
                ms(s.first_p99),
                ms(s.whole_p50),
                ms(s.whole_p99),
                format!("{:.2}", s.server_share),
                format!("{:.2}", s.client_share),
            ]);
        }
    }
    rows
}

/// The client's windows, when they are not the matrix's.
fn windows_label(windows: &Windows) -> String {
    if *windows == Windows::DEFAULT {
        return String::new();
    }
    let mut label = format!(
        ", client windows {} per stream, {} per connection",
        size_label(windows.stream),
        size_label(windows.connection)
    );
    if let Some(max_frame) = windows.max_frame {
        let _ = write!(label, ", max frame {}", size_label(max_frame));
    }
    label
}

fn section_title(cells: &[Cell], section: Section) -> String {
    let Some(cell) = cells.iter().find(|c| c.section == section) else {
        return String::new();
    };
    let mut quota = cell
        .server_quota
        .map_or(String::new(), |q| format!(", server held to {q:.2} CPU"));
    quota.push_str(&windows_label(&cell.windows));
    let what = match section {
        Section::Matrix => "size × messages per stream, every message ready",
        Section::Compressed => "compressed responses",
        Section::Paced => "paced source: one message at a time",
        Section::Saturated => "saturating: server as the bottleneck",
        Section::Budget => {
            "receive budget never waiting ('vs stock': a budget arm against the same server on the same HTTP/2 windows without a budget, a windows arm against the batched server on default windows)"
        }
        Section::Unary => "unary: one request echoed back, a call is one message",
        Section::Large => "large messages on the matrix's client windows",
        Section::LargeWide => {
            "large messages on wide client windows: the server never waits for a window update"
        }
    };
    format!("{what} ({} streams in flight{quota})", cell.concurrency)
}

const SECTIONS: [Section; 8] = [
    Section::Matrix,
    Section::Compressed,
    Section::Paced,
    Section::Saturated,
    Section::Budget,
    Section::Unary,
    Section::Large,
    Section::LargeWide,
];

/// Prints every section's table.
pub fn print_tables(cells: &[Cell]) {
    for section in SECTIONS {
        let rows = rows(cells, section);
        if rows.is_empty() {
            continue;
        }
        println!("\n{}", section_title(cells, section));
        let rows: Vec<Vec<String>> = rows.into_iter().map(Vec::from).collect();
        crate::report::print_columns(&HEADER, &rows, 2);
    }
}

/// The Markdown of every section (full tables) and the batched-vs-unbatched
/// summary, for the README.
pub fn markdown(cells: &[Cell]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", summary_markdown(cells));
    for section in SECTIONS {
        let rows = rows(cells, section);
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n#### {}\n", section_title(cells, section));
        let _ = writeln!(out, "| {} |", HEADER.join(" | "));
        let _ = writeln!(out, "|---|---|{}", "---:|".repeat(COLUMNS - 2));
        for row in rows {
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
    }
    out
}

/// Per shape: server µs per message and DATA frames per stream of batched,
/// unbatched and stock, on both stacks, and the floor.
fn summary_markdown(cells: &[Cell]) -> String {
    let mut out = String::new();
    let mut shapes: Vec<Shape> = Vec::new();
    for cell in cells.iter().filter(|c| c.section == Section::Matrix) {
        if !shapes.contains(&cell.shape) {
            shapes.push(cell.shape);
        }
    }
    if shapes.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "| shape | volo batched | volo unbatched | volo stock | tonic batched | tonic unbatched | tonic stock | bare hyper |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
    let arms = [
        (Stack::Volo, Variant::Batched),
        (Stack::Volo, Variant::Unbatched),
        (Stack::Volo, Variant::Stock),
        (Stack::Tonic, Variant::Batched),
        (Stack::Tonic, Variant::Unbatched),
        (Stack::Tonic, Variant::Stock),
        (Stack::Bare, Variant::Floor),
    ];
    for shape in &shapes {
        let mut row = format!("| {} |", shape_label(shape));
        for (stack, variant) in arms {
            let arm = MatrixArm { stack, variant };
            let value = find(cells, Section::Matrix, shape, arm)
                .and_then(summary)
                .map_or("-".into(), |s| {
                    format!(
                        "{:.2} µs · {:.0} fr",
                        s.server_us_per_message, s.frames_per_stream
                    )
                });
            let _ = write!(row, " {value} |");
        }
        let _ = writeln!(out, "{row}");
    }
    out
}

fn sample_json(sample: &CellSample, count: u32) -> Value {
    json!({
        "streams": sample.streams,
        "messages": sample.messages,
        "compressed_messages": sample.compressed_messages,
        "data_frames": sample.frames,
        "window_s": sample.cpu.seconds,
        "server_cpu_us": sample.cpu.server_us,
        "server_cpu_share": sample.cpu.server_share,
        "client_cpu_share": sample.cpu.client_share,
        "server_us_per_message": sample.server_us_per_message(),
        "frames_per_stream": sample.frames_per_stream(count),
        "first_message_us": {"p50": sample.first_p50, "p99": sample.first_p99},
        "whole_stream_us": {"p50": sample.whole_p50, "p99": sample.whole_p99},
    })
}

/// Writes every sample and each cell's representative round as JSON, and
/// its chart (`.svg`) and the Markdown tables (`.md`) next to it.
pub fn write(settings: &MatrixSettings, cells: &[Cell], json_path: &Path) {
    let cells_json: Vec<Value> = cells
        .iter()
        .map(|cell| {
            let s = summary(cell);
            json!({
                "section": cell.section.key(),
                "arm": cell.arm.key(),
                "baseline": cell.arm.baseline().key(),
                "size": cell.shape.size,
                "count": cell.shape.count,
                "compression": cell.shape.compression.map(|e| e.name()),
                "pace_micros": cell.shape.pace_micros,
                "client_stream": cell.shape.client_stream(),
                "call": cell.shape.call.key(),
                "windows": {
                    "stream": cell.windows.stream,
                    "connection": cell.windows.connection,
                    "max_frame": cell.windows.max_frame,
                },
                "concurrency": cell.concurrency,
                "server_quota": cell.server_quota,
                "error": cell.error,
                "representative": s.map(|s| json!({
                    "messages_per_second": s.messages_per_second,
                    "server_us_per_message": s.server_us_per_message,
                    "server_us_per_message_range": [s.server_us_per_message_range.0, s.server_us_per_message_range.1],
                    "server_us_per_stream": s.server_us_per_stream,
                    "frames_per_stream": s.frames_per_stream,
                    "first_message_us": {"p50": s.first_p50, "p99": s.first_p99},
                    "whole_stream_us": {"p50": s.whole_p50, "p99": s.whole_p99},
                    "server_cpu_share": s.server_share,
                    "client_cpu_share": s.client_share,
                })),
                "samples": cell.samples.iter().map(|x| sample_json(x, cell.shape.count)).collect::<Vec<_>>(),
            })
        })
        .collect();
    let document = json!({
        "settings": {
            "warmup_s": settings.warmup.as_secs_f64(),
            "window_s": settings.window.as_secs_f64(),
            "rounds": settings.rounds,
            "cpus": crate::measure::cpu_count(),
        },
        "cells": cells_json,
    });
    println!();
    crate::report::write_document(&document, json_path, "raw results");
    crate::report::write_chart(&document, json_path, None);
    let markdown_path = json_path.with_extension("md");
    crate::report::write_file(&markdown_path, &markdown(cells), "tables");
}
