//! Strings as JSON: escaped where needed, and those of the space written from a
//! cache of their quoted form.
//!
//! Every slice writes its name and category, and a profile has few distinct ones.
//! Quoting one takes a test of its bytes and a copy of unknown length (a call to
//! `memmove`) beside the quotes: about a tenth of writing a trace. A string borrowed
//! from the space lives as long as the walk at one address, so its address and length
//! identify it: [`Quoted`] keeps its quoted form in a fixed-size slot, appended with a
//! copy of known size.

/// Appends `s` as a JSON string.
pub(super) fn json_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.push(b'"');
    // Nearly every name needs no escape: one test of all its bytes, then one copy,
    // instead of a match per byte.
    if !needs_escape(bytes) {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1f => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Whether any of `bytes` is a control character, `"` or `\\`: eight bytes at a time
/// (the compiler does not vectorise the early-exit test byte by byte), each test
/// exact for the whole word.
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    // A byte of `x` is zero (or, with `n`, below `n` <= 0x80) exactly when this has its
    // high bit set in some byte.
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        let w = u64::from_ne_bytes(w);
        let hit = below(w, 0x20)
            | below(w ^ (ONES * u64::from(b'"')), 1)
            | below(w ^ (ONES * u64::from(b'\\')), 1);
        if hit != 0 {
            return true;
        }
    }
    words
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// Slots in [`Quoted`]: a profile's names and categories number a few dozen, and a
/// clash only costs quoting again.
const SLOTS: usize = 256;
/// Bytes a slot holds: strings longer than this, quoted, are quoted every time.
const SLOT_BYTES: usize = 62;

/// Quoted forms of strings that live for `'a`, by address and length.
pub(super) struct Quoted<'a> {
    slots: Vec<Slot>,
    _strings: std::marker::PhantomData<&'a str>,
}

#[derive(Clone, Copy)]
struct Slot {
    /// Address and length of the string, or (0, 0) while empty.
    key: (usize, usize),
    len: u8,
    text: [u8; SLOT_BYTES],
}

impl Default for Quoted<'_> {
    fn default() -> Self {
        let empty = Slot {
            key: (0, 0),
            len: 0,
            text: [0; SLOT_BYTES],
        };
        Quoted {
            slots: vec![empty; SLOTS],
            _strings: std::marker::PhantomData,
        }
    }
}

impl<'a> Quoted<'a> {
    /// Appends `s` as a JSON string, from the cache when it was quoted before.
    ///
    /// Only for strings of `'a` (the space's): a temporary string could be freed and
    /// another made at its address.
    #[inline]
    pub(super) fn put(&mut self, out: &mut Vec<u8>, s: &'a str) {
        let key = (s.as_ptr() as usize, s.len());
        // Some higher address bits folded into the low ones, and the length, so that a
        // string and its prefix (one address) take different slots.
        let slot = &mut self.slots[(key.0 ^ key.0 >> 9 ^ key.1 << 4) % SLOTS];
        if slot.key != key {
            let at = out.len();
            json_str(out, s);
            let quoted = &out[at..];
            // No `&str` is at address 0, so a slot is never taken for an empty one.
            if quoted.len() <= SLOT_BYTES {
                slot.text[..quoted.len()].copy_from_slice(quoted);
                slot.len = quoted.len() as u8;
                slot.key = key;
            }
            return;
        }
        let at = out.len();
        out.extend_from_slice(&slot.text);
        out.truncate(at + usize::from(slot.len));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chrome::written;

    #[test]
    fn strings_are_escaped() {
        assert_eq!(
            written(|o| json_str(o, "a\"b\\c\nd\u{1}é")),
            r#""a\"b\\c\nd\u0001é""#
        );
    }

    #[test]
    fn escapes_are_found_in_every_position() {
        let plain = "abcdefghijklmnopqrstuvwxyz-0123456789_é.";
        assert!(!needs_escape(plain.as_bytes()));
        for at in 0..plain.len() {
            for bad in [0u8, 0x1f, b'"', b'\\'] {
                let mut bytes = plain.as_bytes().to_vec();
                bytes[at] = bad;
                assert!(needs_escape(&bytes), "{bad:#x} at {at}");
            }
            // Neighbours of the escaped bytes, and bytes with the high bit set,
            // need none.
            for fine in [0x20u8, b'!', b'#', b'[', b']', 0x7f, 0x80, 0xa2, 0xdc, 0xff] {
                let mut bytes = plain.as_bytes().to_vec();
                bytes[at] = fine;
                assert!(!needs_escape(&bytes), "{fine:#x} at {at}");
            }
        }
    }

    #[test]
    fn cached_strings_are_quoted_as_json_str_quotes_them() {
        let long = "x".repeat(SLOT_BYTES);
        let strings = [
            "op",
            "o",
            "op",
            "host",
            "a\"b",
            "\u{1}",
            "",
            long.as_str(),
            "é",
            "host",
        ];
        let mut quoted = Quoted::default();
        // Twice: the first quotes and keeps, the second reads back.
        for _ in 0..2 {
            for text in strings {
                // Prefixes of one string share its address.
                for end in (0..=text.len()).filter(|&e| text.is_char_boundary(e)) {
                    let text = &text[..end];
                    let mut expected = Vec::new();
                    json_str(&mut expected, text);
                    let mut got = b"[".to_vec();
                    quoted.put(&mut got, text);
                    assert_eq!(got[1..], expected[..], "{text:?}");
                }
            }
        }
    }
}
