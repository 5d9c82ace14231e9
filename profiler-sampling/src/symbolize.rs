//! Addresses to functions, after the session (never during it: reading DWARF takes
//! time and memory a sampled program should not pay while it runs), with blazesym:
//! ELF symbol tables, DWARF line tables and inlined frames, `.gnu_debuglink` and
//! build-id debug files, demangled Rust and C++ names. Each file is opened once for
//! all its addresses, at their file offsets in the mappings snapshot during the
//! session, so that a library unloaded before the stop still resolves from its file.
//!
//! An address in a file without symbols (stripped) or outside every known mapping
//! keeps its address, and its module and build id through its mapping, with no
//! function: pprof shows it as `module+0xoffset`, unsymbolised.

use std::collections::HashMap;

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};

use crate::maps::Maps;

/// A function at an address, with where in its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    pub(crate) name: String,
    pub(crate) file: Option<String>,
    pub(crate) line: u32,
}

/// What an address resolved to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The index of its mapping in [`Maps::all`], if any holds it.
    pub(crate) mapping: Option<usize>,
    /// Innermost first: the functions inlined at the address, then the function they
    /// were inlined into. Empty when unsymbolised.
    pub(crate) frames: Vec<Frame>,
}

/// Resolves each of `addrs` through the mappings in `maps`.
pub(crate) fn resolve(addrs: &[u64], maps: &Maps) -> Vec<Resolved> {
    let mut out = vec![Resolved::default(); addrs.len()];
    let mut by_mapping: HashMap<usize, (Vec<usize>, Vec<u64>)> = HashMap::new();
    for (i, &addr) in addrs.iter().enumerate() {
        if let Some((m, mapping)) = maps.find(addr) {
            out[i].mapping = Some(m);
            if mapping.is_file() {
                let (indices, offsets) = by_mapping.entry(m).or_default();
                indices.push(i);
                offsets.push(mapping.file_offset(addr));
            }
        }
    }
    let symbolizer = Symbolizer::builder()
        .enable_code_info(true)
        .enable_inlined_fns(true)
        .build();
    for (m, (indices, offsets)) in by_mapping {
        let source = Source::Elf(Elf::new(&maps.all[m].path));
        let Ok(results) = symbolizer.symbolize(&source, Input::FileOffset(&offsets)) else {
            continue; // the file is gone or unreadable: its addresses stay unsymbolised
        };
        for (i, result) in indices.into_iter().zip(results) {
            if let Symbolized::Sym(sym) = result {
                let mut frames: Vec<Frame> = sym
                    .inlined
                    .iter()
                    .rev()
                    .map(|f| Frame {
                        name: f.name.to_string(),
                        file: f
                            .code_info
                            .as_ref()
                            .map(|c| c.to_path().display().to_string()),
                        line: f.code_info.as_ref().and_then(|c| c.line).unwrap_or(0),
                    })
                    .collect();
                frames.push(Frame {
                    name: sym.name.to_string(),
                    file: sym
                        .code_info
                        .as_ref()
                        .map(|c| c.to_path().display().to_string()),
                    line: sym.code_info.as_ref().and_then(|c| c.line).unwrap_or(0),
                });
                out[i].frames = frames;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn a_function_to_find(x: u64) -> u64 {
        std::hint::black_box(x) ^ 0x5a
    }

    #[test]
    fn this_program_s_functions_are_found_and_unmapped_addresses_are_kept() {
        let mut maps = Maps::default();
        crate::maps::snapshot(&mut maps);
        let addr = a_function_to_find as fn(u64) -> u64 as usize as u64;
        std::hint::black_box(a_function_to_find(3));
        let resolved = resolve(&[addr + 1, 8], &maps);
        let frames = &resolved[0].frames;
        assert!(resolved[0].mapping.is_some());
        assert!(
            frames.iter().any(|f| f.name.contains("a_function_to_find")),
            "{frames:?}"
        );
        assert_eq!(resolved[1], Resolved::default());
    }
}
