//! Whether this program was built with frame pointers, which both triggers unwind
//! by: without them the kernel's call chains and the handler's walk stop after a
//! frame or two, or wander into garbage.
//!
//! Rust's standard library ships with frame pointers (since 1.79); a program's own
//! crates get them from `-C force-frame-pointers=yes`, which reaches every crate of a
//! build through `RUSTFLAGS` or `.cargo/config.toml`. So the question is asked of a
//! function of this crate, compiled with the same flags as the program: does its
//! machine code start by saving the frame pointer? `force-frame-pointers=yes` gives
//! every function, leaves included, that prologue.

/// The warning for a program built without frame pointers, with the fix.
pub(crate) const MISSING: &str = "prof: this program was built without frame pointers, so \
    its sampled stacks stop after a frame or two (each sample still names the function it \
    was in); for whole stacks, build with them: in .cargo/config.toml, \
    [build] rustflags = [\"-C\", \"force-frame-pointers=yes\"]";

/// A leaf function: without forced frame pointers it has no prologue at all.
#[inline(never)]
fn probe(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_mul(3)
}

/// Whether this crate was built with frame pointers; `None` where that cannot be told
/// (other architectures than x86-64 and AArch64).
pub(crate) fn present() -> Option<bool> {
    let code = probe as fn(u64) -> u64 as *const u8;
    let mut bytes = [0u8; 8];
    for (i, b) in bytes.iter_mut().enumerate() {
        #[allow(unsafe_code)]
        // SAFETY: the first bytes of a function of this crate: mapped, readable code.
        let byte = unsafe { std::ptr::read_volatile(code.add(i)) };
        *b = byte;
    }
    std::hint::black_box(probe(1));
    prologue_saves_frame_pointer(&bytes)
}

fn prologue_saves_frame_pointer(code: &[u8; 8]) -> Option<bool> {
    if cfg!(target_arch = "x86_64") {
        // `endbr64` may come first; then `push %rbp` (0x55).
        let rest = code.strip_prefix(&[0xf3, 0x0f, 0x1e, 0xfa]).unwrap_or(code);
        Some(rest.first() == Some(&0x55))
    } else if cfg!(target_arch = "aarch64") {
        // `stp x29, x30, [sp, #-N]!`: opcode bits 0xa9800000 with Rt = 29, Rt2 = 30.
        let word = u32::from_le_bytes([code[0], code[1], code[2], code[3]]);
        let next = u32::from_le_bytes([code[4], code[5], code[6], code[7]]);
        let stp = |w: u32| w & 0xffc0_7fff == 0xa980_7bfd;
        // A `paciasp` or `bti` may come first.
        Some(stp(word) || stp(next))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prologues_are_read() {
        if cfg!(target_arch = "x86_64") {
            assert_eq!(
                prologue_saves_frame_pointer(&[0x55, 0x48, 0x89, 0xe5, 0, 0, 0, 0]),
                Some(true)
            );
            assert_eq!(
                prologue_saves_frame_pointer(&[0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5]),
                Some(true)
            );
            // lea (%rdi,%rdi,2),%rax; ret
            assert_eq!(
                prologue_saves_frame_pointer(&[0x48, 0x8d, 0x04, 0x7f, 0xc3, 0, 0, 0]),
                Some(false)
            );
        }
        // Whatever this test binary was built with, the answer is one of the two, and
        // agrees with the build's flags when CI says what they are.
        let present = present();
        if let Ok(flags) = std::env::var("PROF_TEST_FRAME_POINTERS") {
            assert_eq!(present, Some(flags == "1"));
        }
    }
}
