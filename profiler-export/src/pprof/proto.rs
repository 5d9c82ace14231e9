//! pprof's `profile.proto` (package `perftools.profiles`, from google/pprof), as prost
//! messages written by hand: the schema is small and stable, and no `protoc` is
//! needed. Field numbers are those of the public schema; `go tool pprof` reads what
//! they encode (checked in CI).
//!
//! Every string is an index into [`Profile::string_table`], whose first entry is `""`.

/// `Profile`: the samples, and the tables their stacks and labels point into.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    /// What each of a sample's values measures (`samples`/`count`, `cpu`/`nanoseconds`).
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// One per distinct stack and label set.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    /// The mapped files the addresses fall in.
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// One per distinct address.
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// One per distinct function.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Every string, `""` first.
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// Regular expression of frames to drop (an index into the string table).
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    /// Regular expression of frames to keep.
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    /// When the profile was started, Unix nanoseconds.
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// How long it covers, nanoseconds.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// What `period` measures.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// The sampling period: CPU nanoseconds between two samples of a thread.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free-form notes (indices into the string table): which sampler ran and why.
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// The sample type shown by default (an index into the string table).
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// `ValueType`: a type and its unit, both string indices.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueType {
    /// The type, e.g. `cpu`.
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// The unit, e.g. `nanoseconds`.
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// `Sample`: a stack, its values and labels.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The stack, leaf first, as location ids.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per [`Profile::sample_type`].
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// Labels: thread, step, annotations.
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// `Label`: a key with a string or a number.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    /// The key (string index).
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// A string value (string index), or 0.
    #[prost(int64, tag = "2")]
    pub str: i64,
    /// A numeric value, when `str` is 0.
    #[prost(int64, tag = "3")]
    pub num: i64,
    /// The unit of `num` (string index), or 0.
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// `Mapping`: a file mapped into the process.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    /// Its id, from 1.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// First address of the mapping.
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// The address past its end.
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// Where in the file it starts.
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// The file's path (string index).
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// The file's GNU build id, hex (string index).
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    /// Its addresses were resolved to functions.
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    /// ... to source files.
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    /// ... to line numbers.
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    /// ... with inlined frames.
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// `Location`: one address, and the functions (inlined ones first) it is in.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    /// Its id, from 1.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The mapping it falls in, or 0.
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// The address (a caller's: its call instruction, one byte before the return).
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// The innermost inlined function first, the function it was inlined into last;
    /// none when the address could not be symbolised.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    /// Several functions folded into one.
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

/// `Line`: a function and a line in it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Line {
    /// The function's id.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// The line number, or 0.
    #[prost(int64, tag = "2")]
    pub line: i64,
    /// The column, or 0.
    #[prost(int64, tag = "3")]
    pub column: i64,
}

/// `Function`: a function's names and source file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Function {
    /// Its id, from 1.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The demangled name (string index).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// The symbol's own name, mangled (string index).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// The source file (string index).
    #[prost(int64, tag = "4")]
    pub filename: i64,
    /// The line it starts at, or 0.
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}
