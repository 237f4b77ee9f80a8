//! The server arms: which binary, which flags, and which stock arm each is
//! compared with.

/// One server configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arm {
    /// volo-grpc as shipped.
    StockVolo,
    /// volo-grpc with this crate's encoder and decoder.
    Volo,
    /// tonic as shipped.
    StockTonic,
    /// tonic with this crate's codec.
    Tonic,
    /// tonic with this crate's full framing (build hook).
    TonicFull,
    /// hyper's HTTP/2 server and prost, no gRPC framework: the floor.
    BareHyper,
    /// [`Arm::Volo`] built without the crate's `opentelemetry` feature,
    /// serving the same Prometheus exporter (`--metrics-listen`), on which
    /// nothing is recorded.
    VoloOff,
    /// [`Arm::Volo`] recording its metrics on a Prometheus exporter
    /// (`--metrics-listen`).
    VoloMetrics,
    /// [`Arm::TonicFull`] built without the crate's `opentelemetry`
    /// feature, serving the same exporter.
    TonicFullOff,
    /// [`Arm::TonicFull`] recording its metrics on a Prometheus exporter.
    TonicFullMetrics,
    /// [`Arm::VoloMetrics`] against the same binary with nothing installed
    /// ([`Arm::Volo`]): the recording alone, in one code layout.
    VoloRecording,
    /// [`Arm::TonicFullMetrics`] against [`Arm::TonicFull`].
    TonicFullRecording,
}

impl Arm {
    /// Every arm, in the order they are reported.
    pub const ALL: [Arm; 6] = [
        Arm::StockVolo,
        Arm::Volo,
        Arm::StockTonic,
        Arm::Tonic,
        Arm::TonicFull,
        Arm::BareHyper,
    ];

    /// The metrics' cost (`--observe`): each server with the feature off,
    /// as the README's run builds it (on, nothing installed), and recording
    /// on an exporter.
    pub const OBSERVE: [Arm; 6] = [
        Arm::VoloOff,
        Arm::Volo,
        Arm::VoloMetrics,
        Arm::TonicFullOff,
        Arm::TonicFull,
        Arm::TonicFullMetrics,
    ];

    /// Short name used on the command line and in the JSON.
    pub fn key(self) -> &'static str {
        match self {
            Arm::StockVolo => "volo-stock",
            Arm::Volo => "volo-codec",
            Arm::StockTonic => "tonic-stock",
            Arm::Tonic => "tonic-codec",
            Arm::TonicFull => "tonic-full",
            Arm::BareHyper => "bare-hyper",
            Arm::VoloOff => "volo-off",
            Arm::VoloMetrics => "volo-metrics",
            Arm::TonicFullOff => "tonic-full-off",
            Arm::TonicFullMetrics => "tonic-full-metrics",
            Arm::VoloRecording => "volo-recording",
            Arm::TonicFullRecording => "tonic-full-recording",
        }
    }

    /// The recording alone, each against its own binary with nothing
    /// installed (by `--arms` only).
    pub const RECORDING: [Arm; 2] = [Arm::VoloRecording, Arm::TonicFullRecording];

    /// Parses [`Arm::key`].
    pub fn from_key(key: &str) -> Option<Arm> {
        Arm::ALL
            .into_iter()
            .chain(Arm::OBSERVE)
            .chain(Arm::RECORDING)
            .find(|arm| arm.key() == key)
    }

    /// Human-readable label for the table.
    pub fn label(self) -> &'static str {
        match self {
            Arm::StockVolo => "stock volo-grpc",
            Arm::Volo => "volo-grpc + grpc-stream-codec",
            Arm::StockTonic => "stock tonic",
            Arm::Tonic => "tonic + grpc-stream-codec",
            Arm::TonicFull => "tonic + grpc-stream-codec (full framing)",
            Arm::BareHyper => "bare hyper + prost (no framework)",
            Arm::VoloOff => "volo-grpc + grpc-stream-codec, metrics feature off, same exporter",
            Arm::VoloMetrics => "volo-grpc + grpc-stream-codec, metrics on an exporter",
            Arm::TonicFullOff => "tonic full framing, metrics feature off, same exporter",
            Arm::TonicFullMetrics => "tonic full framing, metrics on an exporter",
            Arm::VoloRecording => "volo-grpc + grpc-stream-codec, recording",
            Arm::TonicFullRecording => "tonic full framing, recording",
        }
    }

    /// The server binary (a package of this workspace) and its flags.
    pub fn command(self) -> (&'static str, &'static [&'static str]) {
        match self {
            Arm::StockVolo => ("volo-echo-server", &["--stock"]),
            Arm::Volo => ("volo-echo-server", &[]),
            Arm::StockTonic => ("tonic-echo-server", &["--stock"]),
            Arm::Tonic => ("tonic-echo-server", &[]),
            Arm::TonicFull => ("tonic-echo-server", &["--framing", "full"]),
            Arm::BareHyper => ("bare-echo-server", &[]),
            // The exporter served as by the arms that record on it.
            Arm::VoloOff => (VOLO_OFF, &["--metrics-listen", "127.0.0.1:0"]),
            Arm::VoloMetrics | Arm::VoloRecording => {
                ("volo-echo-server", &["--metrics-listen", "127.0.0.1:0"])
            }
            Arm::TonicFullOff => (
                TONIC_OFF,
                &["--framing", "full", "--metrics-listen", "127.0.0.1:0"],
            ),
            Arm::TonicFullMetrics | Arm::TonicFullRecording => (
                "tonic-echo-server",
                &["--framing", "full", "--metrics-listen", "127.0.0.1:0"],
            ),
        }
    }

    /// Whether the arm runs a server built without the metrics feature.
    pub fn feature_off(self) -> bool {
        matches!(self, Arm::VoloOff | Arm::TonicFullOff)
    }

    /// The stock arm this one is compared with (itself for stock arms).
    pub fn baseline(self) -> Arm {
        match self {
            Arm::StockVolo | Arm::Volo => Arm::StockVolo,
            Arm::StockTonic | Arm::Tonic | Arm::TonicFull | Arm::BareHyper => Arm::StockTonic,
            // The metrics' cost is read against the build without them,
            // and that build against the usual one.
            Arm::VoloOff => Arm::Volo,
            Arm::VoloMetrics => Arm::VoloOff,
            Arm::TonicFullOff => Arm::TonicFull,
            Arm::TonicFullMetrics => Arm::TonicFullOff,
            Arm::VoloRecording => Arm::Volo,
            Arm::TonicFullRecording => Arm::TonicFull,
        }
    }
}

/// The volo-grpc example server built without the metrics feature (a copy
/// made by [`crate::server::build_servers`]).
pub const VOLO_OFF: &str = "volo-echo-server-metrics-off";
/// The tonic example server built without the metrics feature.
pub const TONIC_OFF: &str = "tonic-echo-server-metrics-off";
