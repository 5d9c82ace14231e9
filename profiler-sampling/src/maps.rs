//! The process's executable mappings: which file each sampled address lies in, where,
//! and the file's build id. Read from `/proc/self/maps` during the session (at its
//! start, and again whenever a sample falls outside every mapping known), so that a
//! library loaded late (libcuda, libcupti) or unloaded before the stop is still
//! resolved afterwards.

use std::path::PathBuf;

/// One executable mapping of a file (or of the vDSO).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mapping {
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// Where in the file the mapping starts.
    pub(crate) offset: u64,
    /// The file, or a pseudo-path such as `[vdso]`.
    pub(crate) path: PathBuf,
    /// The file's GNU build id, when it has one.
    pub(crate) build_id: Option<Vec<u8>>,
}

impl Mapping {
    /// Whether the mapping is a file symbols can be read from.
    pub(crate) fn is_file(&self) -> bool {
        self.path.is_absolute()
    }

    /// The file offset of `addr`, which the mapping holds.
    pub(crate) fn file_offset(&self, addr: u64) -> u64 {
        addr - self.start + self.offset
    }
}

/// Parses the executable mappings of a `/proc/<pid>/maps` text (build ids left empty).
pub(crate) fn parse(text: &str) -> Vec<Mapping> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Mapping> {
    // start-end perms offset dev inode   path
    let mut fields = line.splitn(6, ' ');
    let range = fields.next()?;
    let perms = fields.next()?;
    let offset = fields.next()?;
    let _dev = fields.next()?;
    let _inode = fields.next()?;
    let path = fields.next().map(str::trim).unwrap_or("");
    if !perms.contains('x') || path.is_empty() {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    Some(Mapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        offset: u64::from_str_radix(offset, 16).ok()?,
        path: PathBuf::from(path),
        build_id: None,
    })
}

/// Every mapping seen: the first snapshot's, and those later snapshots added. A
/// range met again with another file (a library unloaded and another loaded there)
/// keeps both; lookups prefer the latest.
#[derive(Debug, Default)]
pub(crate) struct Maps {
    pub(crate) all: Vec<Mapping>,
}

impl Maps {
    /// The latest mapping holding `addr`.
    pub(crate) fn find(&self, addr: u64) -> Option<(usize, &Mapping)> {
        self.all
            .iter()
            .enumerate()
            .rev()
            .find(|(_, m)| (m.start..m.end).contains(&addr))
    }

    /// Adds the mappings of `snapshot` not seen before, reading each new file's build
    /// id with `build_id`; returns how many were new.
    pub(crate) fn add(
        &mut self,
        snapshot: Vec<Mapping>,
        mut build_id: impl FnMut(&Mapping) -> Option<Vec<u8>>,
    ) -> usize {
        let mut added = 0;
        for mut m in snapshot {
            let known = self.all.iter().any(|k| {
                (k.start, k.end, k.offset, &k.path) == (m.start, m.end, m.offset, &m.path)
            });
            if known {
                continue;
            }
            m.build_id = self
                .all
                .iter()
                .find(|k| k.path == m.path)
                .map_or_else(|| build_id(&m), |k| k.build_id.clone());
            self.all.push(m);
            added += 1;
        }
        added
    }
}

/// Reads `/proc/self/maps` now, with the build ids of files not seen before.
#[cfg(target_os = "linux")]
pub(crate) fn snapshot(maps: &mut Maps) -> usize {
    let Ok(text) = std::fs::read_to_string("/proc/self/maps") else {
        return 0;
    };
    maps.add(parse(&text), |m| {
        if !m.is_file() {
            return None;
        }
        blazesym::helper::read_elf_build_id(&m.path)
            .ok()
            .flatten()
            .map(|id| id.into_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0a00000-55d0c0a40000 r--p 00000000 fd:01 1234 /usr/bin/train
55d0c0a40000-55d0c0b00000 r-xp 00040000 fd:01 1234 /usr/bin/train
7f3a10000000-7f3a10021000 rw-p 00000000 00:00 0
7f3a20000000-7f3a20200000 r-xp 00028000 fd:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6
7f3a30000000-7f3a30010000 r-xp 00000000 fd:01 77 /tmp/libplugin.so (deleted)
7ffd1000a000-7ffd1000c000 r-xp 00000000 00:00 0                          [vdso]
";

    #[test]
    fn executable_mappings_are_read_with_their_offsets() {
        let maps = parse(MAPS);
        assert_eq!(maps.len(), 4, "{maps:?}");
        assert_eq!(maps[0].path, PathBuf::from("/usr/bin/train"));
        assert_eq!(maps[0].file_offset(0x55d0c0a40010), 0x40010);
        assert_eq!(maps[2].path, PathBuf::from("/tmp/libplugin.so"));
        assert_eq!(maps[3].path, PathBuf::from("[vdso]"));
        assert!(!maps[3].is_file());
    }

    #[test]
    fn later_snapshots_add_libraries_and_lookups_prefer_the_latest() {
        let mut maps = Maps::default();
        let mut reads = 0;
        let mut id = |_: &Mapping| {
            reads += 1;
            Some(vec![0xab])
        };
        assert_eq!(maps.add(parse(MAPS), &mut id), 4);
        assert_eq!(maps.add(parse(MAPS), &mut id), 0);
        let late = "7f3a30000000-7f3a30010000 r-xp 00000000 fd:01 78 /opt/cuda/libcupti.so\n";
        assert_eq!(maps.add(parse(late), &mut id), 1);
        assert_eq!(
            reads, 5,
            "one read per file: train, libc, plugin, vdso, cupti"
        );
        let (_, m) = maps.find(0x7f3a30000100).expect("mapped");
        assert_eq!(m.path, PathBuf::from("/opt/cuda/libcupti.so"));
        assert!(maps.find(0x10).is_none());
    }
}
