//! Ctrl-C: a long write must not leave a hidden temporary file behind.
//!
//! prof writes every file to a temporary name beside it and renames it into place. A
//! process interrupted half way would leave that temporary file (hundreds of MB for a
//! long trace), hidden by its leading dot. The handler removes every temporary file
//! the process has open, then exits as an interrupted process does (130).

/// Installs the handler; a failure (another handler was installed) is only reported:
/// the tool still works, it just cleans up less on Ctrl-C.
pub fn install(tool: &'static str) {
    let installed = ctrlc::set_handler(move || {
        profiler_export::atomic::remove_temporaries();
        eprintln!("{tool}: interrupted");
        std::process::exit(130);
    });
    if let Err(e) = installed {
        eprintln!("{tool}: warning: Ctrl-C will not clean up temporary files: {e}");
    }
}
