//! Quoting what a client sent in an error message: a prefix of it, never all of it. A
//! long string quoted whole would turn the real error into RESOURCE_EXHAUSTED (the
//! status no longer fits in the trailers). Both request validation and the writer
//! quote, so this sits below both.

/// How much of a client's string an error message quotes.
pub(super) const QUOTE_BYTES: usize = 64;
/// Longest message built from another component's error (which may quote a value).
const MAX_MESSAGE_BYTES: usize = 512;

/// `value` quoted for an error message: whole when short, else its first
/// [`QUOTE_BYTES`] and its length.
pub(super) fn quote(value: &str) -> String {
    if value.len() <= QUOTE_BYTES {
        return format!("{value:?}");
    }
    let mut end = QUOTE_BYTES;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}… ({} bytes)", &value[..end], value.len())
}

/// `message` cut to [`MAX_MESSAGE_BYTES`], for messages other code built from client
/// input.
pub(super) fn clip(message: &str) -> String {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message.to_owned();
    }
    let mut end = MAX_MESSAGE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &message[..end], message.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_keep_short_strings_and_cut_long_ones_at_a_character() {
        assert_eq!(quote("abc"), "\"abc\"");
        let long = "é".repeat(100);
        let quoted = quote(&long);
        assert!(quoted.ends_with("… (200 bytes)"), "{quoted}");
        assert!(quoted.len() < QUOTE_BYTES + 30, "{quoted}");
        assert_eq!(clip("short"), "short");
        assert!(clip(&"x".repeat(10_000)).len() < MAX_MESSAGE_BYTES + 30);
    }
}
