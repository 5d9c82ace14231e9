//! Field values: what `key = value` in an annotation may carry.
//!
//! A field is recorded inline in the thread's buffer, so values are limited to what
//! fits a record without allocating: integers, floats, bools and strings (copied).

/// A field value as recorded: borrowed for the moment it is copied into the buffer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// A signed integer.
    I64(i64),
    /// An unsigned integer.
    U64(u64),
    /// A floating point number.
    F64(f64),
    /// A boolean.
    Bool(bool),
    /// A string, copied into the buffer.
    Str(&'a str),
}

/// Types that can be the value of an annotation field.
///
/// Implemented for the integer types, `f32`/`f64`, `bool`, `str`, `String`, and
/// references to any of them.
pub trait AsValue {
    /// This value as a field value.
    fn as_value(&self) -> Value<'_>;
}

macro_rules! signed {
    ($($t:ty)*) => {$(
        impl AsValue for $t {
            #[inline]
            fn as_value(&self) -> Value<'_> { Value::I64(*self as i64) }
        }
    )*};
}
macro_rules! unsigned {
    ($($t:ty)*) => {$(
        impl AsValue for $t {
            #[inline]
            fn as_value(&self) -> Value<'_> { Value::U64(*self as u64) }
        }
    )*};
}
signed!(i8 i16 i32 i64 isize);
unsigned!(u8 u16 u32 u64 usize);

impl AsValue for f64 {
    #[inline]
    fn as_value(&self) -> Value<'_> {
        Value::F64(*self)
    }
}

impl AsValue for f32 {
    #[inline]
    fn as_value(&self) -> Value<'_> {
        Value::F64(f64::from(*self))
    }
}

impl AsValue for bool {
    #[inline]
    fn as_value(&self) -> Value<'_> {
        Value::Bool(*self)
    }
}

impl AsValue for str {
    #[inline]
    fn as_value(&self) -> Value<'_> {
        Value::Str(self)
    }
}

impl AsValue for String {
    #[inline]
    fn as_value(&self) -> Value<'_> {
        Value::Str(self)
    }
}

impl<T: AsValue + ?Sized> AsValue for &T {
    #[inline]
    fn as_value(&self) -> Value<'_> {
        (**self).as_value()
    }
}

impl<T: AsValue + ?Sized> AsValue for &mut T {
    #[inline]
    fn as_value(&self) -> Value<'_> {
        (**self).as_value()
    }
}

impl AsValue for Value<'_> {
    #[inline]
    fn as_value(&self) -> Value<'_> {
        *self
    }
}

/// A field value read back from a buffer by the collector: [`Value`] with the string
/// copied out.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum OwnedValue {
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
    Str(String),
}

impl AsValue for OwnedValue {
    #[inline]
    fn as_value(&self) -> Value<'_> {
        match self {
            OwnedValue::I64(v) => Value::I64(*v),
            OwnedValue::U64(v) => Value::U64(*v),
            OwnedValue::F64(v) => Value::F64(*v),
            OwnedValue::Bool(v) => Value::Bool(*v),
            OwnedValue::Str(s) => Value::Str(s),
        }
    }
}
