//! A `tracing` subscriber that keeps every event it is given: the event
//! tests read what the library wrote after a real call.

use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One event: its level, message and fields, as text.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The event's level.
    pub level: Level,
    /// Each field's name and value (the message is the field `message`).
    pub fields: Vec<(String, String)>,
}

impl Seen {
    /// Asserts the event's level and its RPC fields: `rpc.system` is
    /// `grpc`, `rpc.service` and `rpc.method` name the Echo service's
    /// `method`, and `code` is `rpc.grpc.status_code` when given.
    pub fn assert_rpc(&self, level: Level, method: &str, code: Option<i32>) {
        assert_eq!(self.level, level, "{self:?}");
        assert_eq!(self.field("rpc.system"), Some("grpc"), "{self:?}");
        assert_eq!(
            self.field("rpc.service"),
            Some("streamcodec.echo.v1.Echo"),
            "{self:?}"
        );
        assert_eq!(self.field("rpc.method"), Some(method), "{self:?}");
        if let Some(code) = code {
            let code = code.to_string();
            assert_eq!(
                self.field("rpc.grpc.status_code"),
                Some(code.as_str()),
                "{self:?}"
            );
        }
    }

    /// The value of field `name`, if the event has it.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Keeps every event; set it as the default for the test's thread (the
/// server runs on the test's current-thread runtime).
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<Seen>>>);

impl Captured {
    /// Every event so far.
    pub fn all(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }

    /// The one event so far whose message contains `text`; panics, listing
    /// them, when there are more or none.
    pub fn one(&self, text: &str) -> Seen {
        match &self.with_message(text)[..] {
            [event] => event.clone(),
            events => panic!("one event saying {text:?}: {events:?}"),
        }
    }

    /// The events so far whose message contains `text`.
    pub fn with_message(&self, text: &str) -> Vec<Seen> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|seen| seen.field("message").is_some_and(|m| m.contains(text)))
            .cloned()
            .collect()
    }
}

struct Fields(Vec<(String, String)>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl Subscriber for Captured {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields(Vec::new());
        event.record(&mut fields);
        let seen = Seen {
            level: *event.metadata().level(),
            fields: fields.0,
        };
        self.0.lock().unwrap().push(seen);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}
