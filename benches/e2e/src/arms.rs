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

    /// Short name used on the command line and in the JSON.
    pub fn key(self) -> &'static str {
        match self {
            Arm::StockVolo => "volo-stock",
            Arm::Volo => "volo-codec",
            Arm::StockTonic => "tonic-stock",
            Arm::Tonic => "tonic-codec",
            Arm::TonicFull => "tonic-full",
            Arm::BareHyper => "bare-hyper",
        }
    }

    /// Parses [`Arm::key`].
    pub fn from_key(key: &str) -> Option<Arm> {
        Arm::ALL.into_iter().find(|arm| arm.key() == key)
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
        }
    }

    /// The stock arm this one is compared with (itself for stock arms).
    pub fn baseline(self) -> Arm {
        match self {
            Arm::StockVolo | Arm::Volo => Arm::StockVolo,
            Arm::StockTonic | Arm::Tonic | Arm::TonicFull | Arm::BareHyper => Arm::StockTonic,
        }
    }
}
