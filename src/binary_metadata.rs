//! Binary (`-bin`) metadata values: base64, padded or not, several values
//! joined by `,` as some peers send them.

#[cfg(any(feature = "volo", all(test, feature = "tonic")))]
use base64::Engine as _;
#[cfg(any(feature = "volo", feature = "tonic"))]
use http::HeaderMap;

/// Base64 that reads padded and unpadded input alike; peers differ.
pub(crate) const BASE64_LENIENT: base64::engine::GeneralPurpose =
    base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_encode_padding(false)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );

/// The name of the first binary (`-bin`) entry of `headers` whose value is
/// not base64: such a request or response is refused with `internal`, as
/// grpc-go refuses it ([`malformed_binary_message`]). Allocates nothing.
#[cfg(any(feature = "volo", feature = "tonic"))]
pub(crate) fn first_malformed_binary(headers: &HeaderMap) -> Option<&http::HeaderName> {
    headers
        .iter()
        .find(|(name, value)| name.as_str().ends_with("-bin") && !is_binary_value(value.as_bytes()))
        .map(|(name, _)| name)
}

/// The message of a refused binary entry (grpc-go's wording).
#[cfg(any(feature = "volo", feature = "tonic"))]
pub(crate) fn malformed_binary_message(name: &http::HeaderName) -> String {
    format!("malformed binary metadata in header {name:?}: not base64")
}

/// Decodes a binary metadata value: what [`is_binary_value`] accepts, no
/// more (the base64 engine alone would take a part cut inside its padding,
/// such as `aA=`, which grpc-go refuses).
#[cfg(any(feature = "volo", all(test, feature = "tonic")))]
pub(crate) fn decode_binary_header(value: &[u8]) -> Result<Vec<u8>, base64::DecodeError> {
    if !is_binary_value(value) {
        return Err(base64::DecodeError::InvalidPadding);
    }
    let mut decoded = Vec::with_capacity(value.len() / 4 * 3 + 3);
    for part in value.split(|&b| b == b',') {
        BASE64_LENIENT.decode_vec(part.trim_ascii(), &mut decoded)?;
    }
    Ok(decoded)
}

/// Whether [`decode_binary_header`] accepts `value`, decided without
/// decoding it: every part is of the standard alphabet, of a length base64
/// can have, with at most the padding its length calls for, and with the
/// unused bits of its last symbol zero.
#[cfg(any(feature = "volo", feature = "tonic"))]
pub(crate) fn is_binary_value(value: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .all(|part| is_base64_part(part.trim_ascii()))
}

#[cfg(any(feature = "volo", feature = "tonic"))]
fn is_base64_part(part: &[u8]) -> bool {
    let symbols = match part {
        [rest @ .., b'=', b'='] if part.len().is_multiple_of(4) => rest,
        [rest @ .., b'='] if part.len().is_multiple_of(4) => rest,
        _ => part,
    };
    let mut last = 0;
    for &symbol in symbols {
        match symbol_value(symbol) {
            Some(value) => last = value,
            None => return false,
        }
    }
    // A last group of 2 or 3 symbols carries 4 or 2 bits it does not use.
    match symbols.len() % 4 {
        0 => true,
        1 => false,
        2 => last & 0x0f == 0,
        _ => last & 0x03 == 0,
    }
}

/// A symbol's value in the standard base64 alphabet.
#[cfg(any(feature = "volo", feature = "tonic"))]
fn symbol_value(symbol: u8) -> Option<u8> {
    match symbol {
        b'A'..=b'Z' => Some(symbol - b'A'),
        b'a'..=b'z' => Some(symbol - b'a' + 26),
        b'0'..=b'9' => Some(symbol - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

#[cfg(all(test, any(feature = "volo", feature = "tonic")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        for valid in [
            "",
            "AA",
            "AAA",
            "AAAA",
            "AA==",
            "AAA=",
            "aGk",
            "aGk=",
            "YQ,Yg",
            " YQ , Yg ",
        ] {
            assert!(is_binary_value(valid.as_bytes()), "{valid:?}");
            assert!(decode_binary_header(valid.as_bytes()).is_ok(), "{valid:?}");
        }
        for invalid in [
            "A", "AB", "AAB", "A===", "AA=", "aA=", "aGk==", "a-b_", "YQ,A", "Y Q", "=AA",
        ] {
            assert!(!is_binary_value(invalid.as_bytes()), "{invalid:?}");
            assert!(
                decode_binary_header(invalid.as_bytes()).is_err(),
                "{invalid:?}"
            );
        }
    }

    proptest! {
        /// The check agrees with the decoder on every value, valid or not.
        #[test]
        fn check_agrees_with_decoder(value in "[A-Za-z0-9+/=, _-]{0,24}") {
            let decoded = decode_binary_header(value.as_bytes()).is_ok();
            prop_assert_eq!(is_binary_value(value.as_bytes()), decoded, "{:?}", value);
        }
    }
}
