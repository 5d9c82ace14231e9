//! Annotations: `Trace` guards and the `trace!` / `set_metadata!` macros.
//!
//! The names follow TensorFlow's `tf.profiler.experimental.Trace` and JAX's
//! `TraceAnnotation` / `StepTraceAnnotation`: an annotation is an event on the current
//! thread's line, from the guard's creation to its drop, with `key = value` fields;
//! one that carries `step_num` is a training step for XProf.

use std::marker::PhantomData;

use crate::alloc;
use crate::buffer::{self, EventRef};
use crate::field::{AsValue, Value};
use crate::gate;
use crate::schema;
use crate::scope;
use crate::tags::POLL_OF;

/// Level of prof's own annotations (the gate's [`gate::USER_LEVEL`]).
pub use crate::gate::USER_LEVEL;

/// An open annotation; the event ends when it drops.
///
/// Made by [`trace!`](crate::trace). It is `!Send`: an event belongs to the line of
/// the thread that opened it, and must close there.
#[must_use = "the annotation ends when this guard drops; bind it with `let _t = ...`"]
#[derive(Debug)]
pub struct Trace {
    /// The event, with this guard's flags ([`CLOSES`], [`HOOKED`]) in its spare bits:
    /// one field of two words, so the guard is returned and moved in registers (see
    /// [`EventRef`]). A field beside it would make every annotation store the guard
    /// to the stack and reload it.
    event: Option<EventRef>,
    _not_send: PhantomData<*const ()>,
}

/// The event ends when the guard drops (every event but an instant, whose end was
/// written with its start).
const CLOSES: usize = 1;
/// The tracer scope hook was told of the open, so must be of the close.
const HOOKED: usize = 2;
/// The event is a training step (it carries `step_num`): its end records the host
/// heap's level, so that a program whose memory never changes enough to fold a
/// thread's tally still has a point per step on XProf's memory timeline.
const STEP: usize = 4;

impl Trace {
    /// Opens an annotation named `name` if a session records user annotations.
    ///
    /// Prefer [`trace!`](crate::trace), which also skips evaluating field values
    /// while nothing records.
    #[inline]
    pub fn new(name: &'static str) -> Trace {
        if gate::is_open(USER_LEVEL) {
            Trace::begin(name)
        } else {
            Trace::inert()
        }
    }

    /// Opens an annotation without checking the gate (the caller just did).
    #[doc(hidden)]
    #[inline(always)]
    pub fn begin(name: &'static str) -> Trace {
        Trace::begin_with(name, [])
    }

    /// Opens an annotation with its first fields without checking the gate (the
    /// caller just did): what [`trace!`](crate::trace) expands to. The fields are
    /// written with the event in one go, which costs a few nanoseconds per field
    /// where [`set_metadata`](Trace::set_metadata) after the start costs a record of
    /// its own.
    #[doc(hidden)]
    #[inline(always)]
    pub fn begin_with<const N: usize>(
        name: &'static str,
        fields: [(&'static str, Value<'_>); N],
    ) -> Trace {
        // The keys are `stringify!`ed identifiers at every `trace!`: once inlined,
        // this compares constants and folds away.
        let step = if fields.iter().any(|(key, _)| *key == schema::STEP_NUM) {
            STEP
        } else {
            0
        };
        let event = buffer::begin_event_with(name, &fields).map(|mut event| {
            let hooked = if scope::enter(&event) { HOOKED } else { 0 };
            event.set_flags(CLOSES | hooked | step);
            event
        });
        Trace {
            event,
            _not_send: PhantomData,
        }
    }

    /// Records a zero-duration event (an instant in the trace viewer) without checking
    /// the gate; fields may be added before the returned guard drops.
    #[doc(hidden)]
    #[inline]
    pub fn instant(name: &'static str) -> Trace {
        Trace {
            event: buffer::instant_event(name),
            _not_send: PhantomData,
        }
    }

    /// A guard that records nothing.
    #[doc(hidden)]
    #[inline(always)]
    pub fn inert() -> Trace {
        Trace {
            event: None,
            _not_send: PhantomData,
        }
    }

    /// Whether this annotation is being recorded.
    #[inline]
    pub fn is_recording(&self) -> bool {
        self.event.is_some()
    }

    /// Adds a field after creation, as `Trace.set_metadata` does in TensorFlow: for
    /// values known only once the work is done (a cache hit, a batch size). Setting a
    /// key again replaces its value.
    ///
    /// The value is evaluated by the caller even when nothing records; use
    /// [`set_metadata!`](crate::set_metadata) to skip that.
    #[inline]
    pub fn set_metadata(&self, key: &'static str, value: impl AsValue) {
        if let Some(event) = &self.event {
            if gate::is_open(USER_LEVEL) {
                buffer::add_field(event, key, value.as_value());
            }
        }
    }
}

impl Trace {
    /// Ends the annotation now; returns where it was recorded and the clock ticks it
    /// ended at, or `None` when it was not recorded.
    #[cfg(feature = "tracing")]
    #[inline]
    pub(crate) fn end(mut self) -> Option<(buffer::EventRef, u64)> {
        let event = self.event.take()?;
        let at = close(&event)?;
        Some((event, at))
    }

    /// Marks the annotation as a training step, whose `step_num` came after its start
    /// (a `tracing` span's fields): its end records the host heap's level.
    #[cfg(feature = "tracing")]
    #[inline]
    pub(crate) fn mark_step(&mut self) {
        if let Some(event) = &mut self.event {
            if event.flags() & CLOSES != 0 {
                event.add_flags(STEP);
            }
        }
    }

    /// Opens an event named `name` tagged as a poll of task `task` (see the
    /// collector's `tasks` module), without checking the gate: the tag is one field
    /// written with the event, whatever the task.
    #[inline(always)]
    pub(crate) fn begin_poll(name: &'static str, task: u64) -> Trace {
        Trace::begin_with(name, [(POLL_OF, Value::U64(task))])
    }
}

impl Drop for Trace {
    // Always inlined: out of line, the guard is stored to the stack for the call and
    // the call saves registers, on every annotation. Telling the scope hook stays out
    // of line (`scope::exit`), so the inlined close is small.
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(event) = &self.event {
            close(event);
        }
    }
}

/// Ends `event` now, if it is one that closes (not an instant), telling the scope
/// hook if it was told of the open, and noting the heap's level at a step's end;
/// returns the clock ticks it ended at.
#[inline(always)]
fn close(event: &buffer::EventRef) -> Option<u64> {
    let flags = event.flags();
    if flags & CLOSES == 0 {
        return None;
    }
    // One test for both rare cases, as there was one for the hook alone: a second
    // would be one more on every annotation's close.
    if flags & (HOOKED | STEP) != 0 {
        before_close(flags);
    }
    Some(buffer::end_event(event))
}

/// What a hooked or step event's close does before the event ends: the level noted
/// before the end, so that it falls inside the step it belongs to.
#[cold]
#[inline(never)]
fn before_close(flags: usize) {
    if flags & HOOKED != 0 {
        scope::exit();
    }
    if flags & STEP != 0 {
        alloc::note_level();
    }
}

/// Opens an annotation on the current thread: `trace!("name", key = value, ...)`.
///
/// The event lasts until the returned [`Trace`] guard drops. Field values may be
/// integers, floats, bools or strings. An annotation with a `step_num` field marks a
/// training step (XProf's overview page graphs it).
///
/// While no session records, the whole macro is one relaxed atomic load: the field
/// expressions are not evaluated and nothing is formatted or allocated.
///
/// ```
/// # use profiler_core::trace;
/// for step in 0..3 {
///     let _step = trace!("Train", step_num = step);
///     let _fwd = trace!("forward", batch = 32, model = "mlp");
/// }
/// ```
#[macro_export]
macro_rules! trace {
    ($name:expr $(, $key:ident = $value:expr)* $(,)?) => {{
        if $crate::gate::is_open($crate::gate::USER_LEVEL) {
            $crate::Trace::begin_with(
                $name,
                [$( (::core::stringify!($key), $crate::field::AsValue::as_value(&$value)) ),*],
            )
        } else {
            $crate::Trace::inert()
        }
    }};
}

/// Adds fields to an open annotation, evaluating them only if it is recorded:
/// `set_metadata!(guard, key = value, ...)`.
///
/// ```
/// # use profiler_core::{trace, set_metadata};
/// let t = trace!("load_batch");
/// let hit = true;
/// set_metadata!(t, in_cache = hit, bytes = 4096);
/// ```
#[macro_export]
macro_rules! set_metadata {
    ($trace:expr $(, $key:ident = $value:expr)+ $(,)?) => {{
        let __prof_trace: &$crate::Trace = &$trace;
        if __prof_trace.is_recording() {
            $( __prof_trace.set_metadata(::core::stringify!($key), &$value); )+
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guard_is_two_words() {
        // Wider, it is stored to the stack and reloaded on every annotation (see
        // `Trace::event`).
        assert_eq!(
            std::mem::size_of::<Trace>(),
            2 * std::mem::size_of::<usize>()
        );
    }
}
