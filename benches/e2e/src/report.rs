//! The results table and the raw JSON.

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

fn ratio(value: f64, baseline: f64) -> String {
    if baseline.is_finite() && baseline > 0.0 && value.is_finite() {
        format!("{:.2}x", value / baseline)
    } else {
        "-".into()
    }
}

/// Prints the medians and each arm's ratio to its stock counterpart.
///
/// For streams/s a ratio above 1 is better; for CPU per stream the ratio is
/// stock divided by arm, so above 1 is better there too.
pub fn print_table(results: &[ArmResults]) {
    println!();
    println!(
        "{:<32} {:>8} {:>12} {:>9} {:>14} {:>9} {:>10} {:>10}",
        "arm",
        "streams",
        "streams/s",
        "ratio",
        "server µs/str",
        "ratio",
        "server CPU",
        "client CPU"
    );
    for result in results {
        let baseline = find(results, result.arm.baseline());
        for (level, samples) in &result.streaming {
            let (rate, cpu) = medians(samples);
            let (base_rate, base_cpu) = baseline
                .and_then(|b| b.streaming.iter().find(|(l, _)| l == level))
                .map_or((f64::NAN, f64::NAN), |(_, s)| medians(s));
            let (server_share, client_share) = cpu_shares(samples);
            println!(
                "{:<32} {:>8} {:>12.0} {:>9} {:>14.1} {:>9} {:>10.2} {:>10.2}",
                result.arm.label(),
                level,
                rate,
                ratio(rate, base_rate),
                cpu,
                ratio(base_cpu, cpu),
                server_share,
                client_share
            );
        }
    }
    println!();
    println!(
        "{:<32} {:>14} {:>9} {:>14} {:>9} {:>10} {:>10}",
        "client-streaming (10 msgs)",
        "µs/stream",
        "ratio",
        "server µs/str",
        "ratio",
        "server CPU",
        "client CPU"
    );
    for result in results {
        let (micros, cpu) = medians(&result.client_streaming);
        let (base_micros, base_cpu) = find(results, result.arm.baseline())
            .map_or((f64::NAN, f64::NAN), |b| medians(&b.client_streaming));
        let (server_share, client_share) = cpu_shares(&result.client_streaming);
        println!(
            "{:<32} {:>14.1} {:>9} {:>14.1} {:>9} {:>10.2} {:>10.2}",
            result.arm.label(),
            micros,
            ratio(base_micros, micros),
            cpu,
            ratio(base_cpu, cpu),
            server_share,
            client_share
        );
    }
    println!();
    println!(
        "{:<32} {:>16} {:>16}",
        "1,000 idle streams after 1 MiB", "RSS growth MiB", "live growth MiB"
    );
    for result in results {
        if let Some(memory) = result.memory {
            let live = memory
                .live_growth
                .map_or("n/a".to_string(), |bytes| format!("{:.1}", mib(bytes)));
            println!(
                "{:<32} {:>16.1} {:>16}",
                result.arm.label(),
                mib(memory.rss_growth),
                live
            );
        }
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

/// Writes every sample and median as JSON (the input of `scripts/e2e_chart.py`).
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
    if let Some(parent) = settings.json.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    match serde_json::to_string_pretty(&document) {
        Ok(text) => match std::fs::write(&settings.json, text) {
            Ok(()) => println!("\nraw results: {}", settings.json.display()),
            Err(err) => eprintln!("could not write {}: {err}", settings.json.display()),
        },
        Err(err) => eprintln!("could not serialise results: {err}"),
    }
}
