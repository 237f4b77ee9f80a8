//! The client binaries' command line and output: `PASS <case>` or
//! `FAIL <case>: <why>` per case, then `N passed, M failed`.

use std::process::ExitCode;

use crate::spec::CASES;

/// The standard interop client flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientArgs {
    /// `--server_host` (default `127.0.0.1`).
    pub host: String,
    /// `--server_port` (required).
    pub port: u16,
    /// `--test_case`: a comma list, or `all` (the default).
    pub cases: Vec<&'static str>,
}

/// The client usage line.
pub const CLIENT_USAGE: &str = "usage: CLIENT --server_port=N [--server_host=127.0.0.1] \
     [--test_case=all|CASE[,CASE...]] [--use_tls=false]";

/// Splits `--name=value` and `--name value` flags into pairs.
fn flags(args: impl IntoIterator<Item = String>) -> Result<Vec<(String, String)>, String> {
    let mut args = args.into_iter();
    let mut pairs = Vec::new();
    while let Some(arg) = args.next() {
        let Some(flag) = arg.strip_prefix("--") else {
            return Err(format!("unexpected argument {arg:?}"));
        };
        match flag.split_once('=') {
            Some((name, value)) => pairs.push((name.to_owned(), value.to_owned())),
            None => {
                let value = args
                    .next()
                    .ok_or_else(|| format!("--{flag} needs a value"))?;
                pairs.push((flag.to_owned(), value));
            }
        }
    }
    Ok(pairs)
}

/// Parses a `--test_case` value.
pub fn parse_cases(list: &str) -> Result<Vec<&'static str>, String> {
    if list == "all" {
        return Ok(CASES.to_vec());
    }
    list.split(',')
        .map(str::trim)
        .map(|name| {
            CASES
                .iter()
                .find(|case| **case == name)
                .copied()
                .ok_or_else(|| format!("unknown test case {name:?}"))
        })
        .collect()
}

impl ClientArgs {
    /// Parses the flags (without the program name).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<ClientArgs, String> {
        let mut host = "127.0.0.1".to_owned();
        let mut port = None;
        let mut cases = CASES.to_vec();
        for (name, value) in flags(args)? {
            match name.as_str() {
                "server_host" => host = value,
                "server_port" => {
                    port = Some(
                        value
                            .parse()
                            .map_err(|_| format!("--server_port {value:?} is not a port"))?,
                    )
                }
                "test_case" => cases = parse_cases(&value)?,
                "use_tls" if value == "false" => {}
                "use_tls" => return Err("only --use_tls=false is supported".to_owned()),
                other => return Err(format!("unknown flag --{other}")),
            }
        }
        let port = port.ok_or("--server_port is required")?;
        Ok(ClientArgs { host, port, cases })
    }

    /// `host:port`, with brackets around an IPv6 host.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// The server flags: `--port N` (required), `--host` (default `127.0.0.1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerArgs {
    /// `--host`.
    pub host: String,
    /// `--port`; 0 picks a free port.
    pub port: u16,
}

/// The server usage line.
pub const SERVER_USAGE: &str = "usage: SERVER --port N [--host 127.0.0.1]";

impl ServerArgs {
    /// Parses the flags (without the program name).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<ServerArgs, String> {
        let mut host = "127.0.0.1".to_owned();
        let mut port = None;
        for (name, value) in flags(args)? {
            match name.as_str() {
                "host" => host = value,
                "port" => {
                    port = Some(
                        value
                            .parse()
                            .map_err(|_| format!("--port {value:?} is not a port"))?,
                    )
                }
                other => return Err(format!("unknown flag --{other}")),
            }
        }
        let port = port.ok_or("--port is required")?;
        Ok(ServerArgs { host, port })
    }

    /// The address to bind.
    pub fn addr(&self) -> Result<std::net::SocketAddr, String> {
        let host: std::net::IpAddr = self
            .host
            .parse()
            .map_err(|_| format!("--host {:?} is not an IP address", self.host))?;
        Ok(std::net::SocketAddr::new(host, self.port))
    }
}

/// Prints one line per case and the totals.
#[derive(Debug, Default)]
pub struct Report {
    passed: usize,
    failed: usize,
}

impl Report {
    /// Prints `PASS case` or `FAIL case: why`.
    pub fn record(&mut self, case: &str, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => {
                self.passed += 1;
                println!("PASS {case}");
            }
            Err(why) => {
                self.failed += 1;
                // One line per case, whatever the reason contains.
                println!("FAIL {case}: {}", why.replace('\n', "\\n"));
            }
        }
    }

    /// Prints `N passed, M failed`; failure if any case failed.
    pub fn finish(self) -> ExitCode {
        println!("{} passed, {} failed", self.passed, self.failed);
        if self.failed == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}

/// `Err(what())` unless `ok`.
pub fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(what()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|arg| (*arg).to_owned()).collect()
    }

    #[test]
    fn client_flags_take_both_spellings_and_case_lists() {
        let args = ClientArgs::parse(strings(&[
            "--server_port=8080",
            "--server_host",
            "::1",
            "--test_case=empty_unary,ping_pong",
            "--use_tls=false",
        ]))
        .unwrap();
        assert_eq!(args.port, 8080);
        assert_eq!(args.authority(), "[::1]:8080");
        assert_eq!(args.cases, ["empty_unary", "ping_pong"]);
        let all = ClientArgs::parse(strings(&["--server_port", "1"])).unwrap();
        assert_eq!(all.cases, CASES);
        assert_eq!(all.host, "127.0.0.1");
    }

    #[test]
    fn client_flags_refuse_what_is_not_supported() {
        for bad in [
            &["--server_port=1", "--use_tls=true"][..],
            &["--server_port=1", "--test_case=nope"],
            &["--server_host=x"],
            &["--server_port=70000"],
            &["--server_port=1", "--frobnicate=1"],
        ] {
            assert!(ClientArgs::parse(strings(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn server_flags_need_a_port() {
        let args = ServerArgs::parse(strings(&["--port", "0"])).unwrap();
        assert_eq!(args.addr().unwrap().to_string(), "127.0.0.1:0");
        assert!(ServerArgs::parse(strings(&["--host", "0.0.0.0"])).is_err());
        assert!(
            ServerArgs::parse(strings(&["--port=1", "--host=nohost"]))
                .unwrap()
                .addr()
                .is_err()
        );
    }
}
