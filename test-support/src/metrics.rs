//! What an OpenTelemetry meter recorded, for tests that make real calls and
//! then read the instruments: one in-memory exporter per process, read as
//! plain numbers per attribute set.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::metrics::{Meter, MeterProvider as _};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{
    InMemoryMetricExporter, InMemoryMetricExporterBuilder, SdkMeterProvider, Temporality,
};

/// One data point: its attributes, and for a histogram its count and sum
/// (for a counter or gauge, `count` 1 and the value as `sum`).
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Attribute name to value, as text.
    pub attributes: BTreeMap<String, String>,
    /// Values recorded (histograms), else 1.
    pub count: u64,
    /// Their sum (histograms), the value (counters, gauges).
    pub sum: f64,
    /// The bucket boundaries (histograms).
    pub bounds: Vec<f64>,
}

impl Point {
    /// The value of attribute `name`.
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes.get(name).map(String::as_str)
    }
}

/// One instrument as exported: its unit and points.
#[derive(Clone, Debug, Default)]
pub struct Instrument {
    /// The unit, e.g. `s`, `By`.
    pub unit: String,
    /// Every point of every export since the last [`Recorder::start`].
    pub points: Vec<Point>,
}

/// The process's meter provider over an in-memory exporter (delta
/// temporality: each export holds what was recorded since the one before).
pub struct Recorder {
    provider: SdkMeterProvider,
    exporter: InMemoryMetricExporter,
    meter: Meter,
    serial: tokio::sync::Mutex<()>,
}

impl Recorder {
    /// The one recorder of this process, made on first use.
    pub fn get() -> &'static Recorder {
        static RECORDER: OnceLock<Recorder> = OnceLock::new();
        RECORDER.get_or_init(|| {
            let exporter = InMemoryMetricExporterBuilder::new()
                .with_temporality(Temporality::Delta)
                .build();
            let provider = SdkMeterProvider::builder()
                .with_periodic_exporter(exporter.clone())
                .build();
            let meter = provider.meter("grpc-stream-codec");
            Recorder {
                provider,
                exporter,
                meter,
                serial: tokio::sync::Mutex::new(()),
            }
        })
    }

    /// The meter to hand to the library.
    pub fn meter(&self) -> &Meter {
        &self.meter
    }

    /// Starts one test's reading: tests of the process take turns (the
    /// instruments are process-wide), and what earlier calls recorded is
    /// dropped.
    pub async fn start(&self) -> tokio::sync::MutexGuard<'_, ()> {
        let turn = self.serial.lock().await;
        self.provider.force_flush().expect("flush");
        self.exporter.reset();
        turn
    }

    /// Everything recorded on instrument `name` since [`Recorder::start`].
    pub fn read(&self, name: &str) -> Instrument {
        self.provider.force_flush().expect("flush");
        let mut instrument = Instrument::default();
        for resource in self.exporter.get_finished_metrics().expect("metrics") {
            for scope in resource.scope_metrics() {
                for metric in scope.metrics().filter(|metric| metric.name() == name) {
                    instrument.unit = metric.unit().to_owned();
                    points(metric.data(), &mut instrument.points);
                }
            }
        }
        instrument
    }

    /// [`Recorder::read`] once `done` holds for it, trying for up to 10 s:
    /// a server records a call as its last frame leaves, which can be just
    /// after the client has read it.
    pub async fn read_when(&self, name: &str, done: impl Fn(&Instrument) -> bool) -> Instrument {
        for _ in 0..1000 {
            let instrument = self.read(name);
            if done(&instrument) {
                return instrument;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.read(name)
    }
}

impl Instrument {
    /// The points whose attributes include every `(name, value)` of `with`.
    pub fn matching(&self, with: &[(&str, &str)]) -> Vec<&Point> {
        self.points
            .iter()
            .filter(|point| with.iter().all(|(k, v)| point.attribute(k) == Some(v)))
            .collect()
    }

    /// The summed count of the points matching `with`.
    pub fn count(&self, with: &[(&str, &str)]) -> u64 {
        self.matching(with).iter().map(|point| point.count).sum()
    }

    /// The value of the last point matching `with` (a gauge's latest).
    pub fn last(&self, with: &[(&str, &str)]) -> Option<f64> {
        self.matching(with).last().map(|point| point.sum)
    }

    /// The summed sum of the points matching `with`.
    pub fn sum(&self, with: &[(&str, &str)]) -> f64 {
        self.matching(with).iter().map(|point| point.sum).sum()
    }
}

fn attributes<'a>(
    attributes: impl Iterator<Item = &'a opentelemetry::KeyValue>,
) -> BTreeMap<String, String> {
    attributes
        .map(|kv| (kv.key.to_string(), kv.value.to_string()))
        .collect()
}

fn points(data: &AggregatedMetrics, out: &mut Vec<Point>) {
    match data {
        AggregatedMetrics::F64(data) => typed(data, out, |v| v),
        AggregatedMetrics::U64(data) => typed(data, out, |v| v as f64),
        AggregatedMetrics::I64(data) => typed(data, out, |v| v as f64),
    }
}

fn typed<T: Copy>(data: &MetricData<T>, out: &mut Vec<Point>, value: impl Fn(T) -> f64) {
    match data {
        MetricData::Histogram(histogram) => {
            out.extend(histogram.data_points().map(|point| Point {
                attributes: attributes(point.attributes()),
                count: point.count(),
                sum: value(point.sum()),
                bounds: point.bounds().collect(),
            }))
        }
        MetricData::Sum(sum) => out.extend(sum.data_points().map(|point| Point {
            attributes: attributes(point.attributes()),
            count: 1,
            sum: value(point.value()),
            bounds: Vec::new(),
        })),
        MetricData::Gauge(gauge) => out.extend(gauge.data_points().map(|point| Point {
            attributes: attributes(point.attributes()),
            count: 1,
            sum: value(point.value()),
            bounds: Vec::new(),
        })),
        MetricData::ExponentialHistogram(_) => {}
    }
}

/// A response a client must refuse, for the client-refusal metrics tests
/// of both adapters: the same cases and expectations on each.
#[derive(Clone, Debug)]
pub struct ClientRefusal {
    /// What the case is, for failure messages.
    pub case: &'static str,
    /// The response a scripted server sends.
    pub script: crate::raw_h2::Script,
    /// The gRPC status code the client's call ends with.
    pub code: i32,
    /// The `grpc_stream_codec.reason` it is counted under.
    pub reason: &'static str,
}

/// Every [`ClientRefusal`] case.
pub fn client_refusals() -> Vec<ClientRefusal> {
    use crate::raw_h2::{Script, envelope};
    let ok = [("grpc-status", "0")];
    vec![
        ClientRefusal {
            case: "a reserved flag bit",
            script: Script::full(&[], &envelope(2, b"hi"), &ok),
            code: 13,
            reason: "bad_envelope",
        },
        ClientRefusal {
            case: "a grpc-encoding this build does not read",
            script: Script::full(&[("grpc-encoding", "snappy")], &envelope(1, b"hi"), &ok),
            code: 12,
            reason: "unsupported_encoding",
        },
    ]
}
