//! Logdirs at object-storage URLs, written and read by the installed tools against
//! real servers on loopback:
//!
//! - `s3://` against s3s-fs 0.14.1 (`tests/s3-server`, [`s3`]), which checks SigV4
//!   signatures, honours `If-None-Match`, keeps multipart uploads invisible until
//!   completed and stores each object as a plain file under its root, so what landed
//!   is read back from the disk;
//! - `az://` against Azurite 3.35.0 ([`azure`]), the official Azure Storage emulator;
//! - `gs://` as far as URL handling and configuration go ([`failures`]).
//!
//! The installed tools run as a user runs them ([`setup`]), with credentials in the
//! environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL`, or
//! Azurite's), in a working directory of their own where no `s3:` directory may
//! appear, and with `TMPDIR` pointing at a directory of the test's, where a failed
//! upload's local copy must be. One test binary: [`s3`] and [`azure`] hold the
//! servers and the captures that work, [`failures`] what a store refusing, gone or
//! busy does, [`atomic`] that an object is whole or absent, [`diff_convert`]
//! `prof-diff` and `prof-convert` on URLs.

mod atomic;
mod azure;
mod diff_convert;
mod failures;
mod s3;
mod setup;
