//! `ProfilerLayer`: every `tracing` span in the process on prof's timeline.
//!
//! ```
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! let subscriber = tracing_subscriber::registry().with(profiler_core::ProfilerLayer::new());
//! tracing::subscriber::with_default(subscriber, || {
//!     let _span = tracing::trace_span!("attn", heads = 8).entered();
//! });
//! ```
//!
//! A span becomes an event on the line of the thread that entered it, from enter to
//! exit, written into the same per-thread buffer as `prof::trace!`, so the two nest on
//! one line. Its fields become stats; fields recorded later with `span.record(..)` land
//! on the same event (and on later entries of the span). A `step_num` field makes it a
//! training step, as with `prof::trace!`.
//!
//! What is kept follows the session's `host_tracer_level`:
//!
//! | level | recorded |
//! |---|---|
//! | 1 | only prof's own annotations: this layer records nothing |
//! | 2 (default) | every span the subscriber lets through, whatever its `tracing` level (libraries' TRACE spans such as candle-transformers' included): each entry is a slice, so each poll of a span held across `.await` is one; such a span is also a task, with its lifetime, busy and idle time on a `Tasks` line |
//! | 3 | also `tracing` events, as instant events carrying their fields and message, and flows linking each poll of an async span to the next where they ran on different threads |
//!
//! A span entered more than once counts as an async task when it also closed during
//! the session or ran on more than one thread; spans that a model keeps and enters on
//! every forward pass (candle-transformers' layers) do neither, and stay plain slices.
//!
//! While no session records, each callback is one relaxed atomic load, except `on_exit`,
//! which reads this thread's count of open spans instead (zero).
//!
//! Spans whose fields were given before a session started are recorded without those
//! fields: keeping every span's fields while nothing records would cost every program
//! that never profiles.

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;

use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::annotation::Trace;
use crate::buffer::{self, EventRef};
use crate::clock;
use crate::field::OwnedValue;
use crate::gate;
use crate::schema;
use crate::tags::{CLOSED, PROF_TASK};

/// Host tracer levels at which `tracing` spans, and also `tracing` events, are recorded.
pub use crate::gate::{SPAN_LEVEL, VERBOSE_LEVEL};

/// A `tracing_subscriber::Layer` that records spans (and, verbose, events) into the
/// running prof session.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProfilerLayer {
    /// A byte, not nothing, so that each layer has an address of its own: the
    /// last-created-span cache (`BORN`) tells subscribers apart by it.
    _address: u8,
}

impl ProfilerLayer {
    /// The layer; add it to a registry with `.with(ProfilerLayer::new())`.
    pub fn new() -> ProfilerLayer {
        ProfilerLayer { _address: 0 }
    }

    fn key(&self) -> usize {
        std::ptr::from_ref(self).addr()
    }
}

/// Fields of a span, kept in its registry extensions while a session records.
#[derive(Debug, Default)]
struct SpanFields(Vec<(&'static str, OwnedValue)>);

impl SpanFields {
    fn set(&mut self, key: &'static str, value: OwnedValue) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }
}

impl Visit for SpanFields {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field.name(), OwnedValue::I64(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set(field.name(), OwnedValue::U64(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.set(field.name(), OwnedValue::F64(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.set(field.name(), OwnedValue::Bool(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.set(field.name(), OwnedValue::Str(value.to_owned()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut text = String::new();
        let _ = write!(text, "{value:?}");
        self.set(field.name(), OwnedValue::Str(text));
    }
}

thread_local! {
    /// Spans entered on this thread and not yet exited, innermost last.
    static OPEN: RefCell<Vec<(Id, Trace)>> = const { RefCell::new(Vec::new()) };
    /// How many entries `OPEN` holds. `on_exit` runs whether or not a session records
    /// and reads this first: it has no destructor, so it is a plain thread-pointer
    /// load, where reaching `OPEN` (which has one) checks its state and borrows it.
    static OPEN_COUNT: Cell<usize> = const { Cell::new(0) };
    /// The span last exited on this thread: a span usually closes right after its
    /// last exit, and then its close is that exit's time (no clock read) and a flag on
    /// that entry's event (no record of its own).
    static LAST_EXIT: Cell<Option<Exited>> = const { Cell::new(None) };
    /// The span last created on this thread while recording.
    static BORN: Cell<Option<Born>> = const { Cell::new(None) };
}

/// A span's exit: its id, its entry's event and when it ended.
struct Exited {
    id: u64,
    event: EventRef,
    at: u64,
}

/// A span just created, as `on_new_span` saw it: most spans are entered right after,
/// on the thread that made them (`span!(..).entered()`, `#[instrument]`), and this
/// gives `on_enter` the span's metadata without looking the span up in the registry.
/// That lookup takes and drops a reference on the span's slot, two atomic
/// read-modify-writes, which on an Intel Xeon also wait for the event just written to
/// leave the store buffer.
///
/// It is right whenever it matches: the registry gives out an id only from the shard
/// of the thread creating the span, so another span with this id, on this
/// subscriber, would have been created on this thread after this one, and gone
/// through `on_new_span`, replacing it, unless the gate was shut at the time, which
/// changes the gate's opening count. `layer` tells subscribers apart: each has its
/// own registry, whose ids overlap.
#[derive(Clone, Copy)]
struct Born {
    id: u64,
    layer: usize,
    opening: u64,
    metadata: &'static Metadata<'static>,
}

impl Born {
    /// The metadata of span `id` entered through `layer`, if it is the one noted.
    #[inline(always)]
    fn metadata(id: &Id, layer: usize) -> Option<&'static Metadata<'static>> {
        BORN.get()
            .filter(|born| {
                born.id == id.into_u64() && born.layer == layer && born.opening == gate::opening()
            })
            .map(|born| born.metadata)
    }
}

/// Sets `fields` on `trace`'s event; a `step_num` among them makes it a training step.
fn apply(trace: &mut Trace, fields: &[(&'static str, OwnedValue)]) {
    for (key, value) in fields {
        trace.set_metadata(key, value);
        if *key == schema::STEP_NUM {
            trace.mark_step();
        }
    }
}

// Each callback is only its gate check, inlined into tracing's `Layered`; the
// recording is out of line. Inlined whole, the recording made `Layered`'s callbacks
// save six registers and set up a large frame before the check, on every span of a
// program that is not profiling (the cost of this layer while off). The `Context`
// goes to the recording by value, two words in registers: passed by reference, it
// was stored to the stack before the gate was read.
impl<S> Layer<S> for ProfilerLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    #[inline]
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if gate::is_open(SPAN_LEVEL) {
            new_span(attrs, id, self.key(), ctx);
        }
    }

    #[inline]
    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if gate::is_open(SPAN_LEVEL) {
            record_fields(id, values, ctx);
        }
    }

    #[inline]
    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if gate::is_open(SPAN_LEVEL) {
            enter_span(id, self.key(), ctx);
        }
    }

    #[inline]
    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        // Not gated: a span entered while recording must close even if the session
        // stopped meanwhile.
        if OPEN_COUNT.get() != 0 {
            exit_span(id);
        }
    }

    #[inline]
    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        if gate::is_open(SPAN_LEVEL) {
            close_span(&id);
        }
    }

    #[inline]
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if gate::is_open(VERBOSE_LEVEL) {
            record_event(event);
        }
    }
}

#[inline(never)]
fn new_span<S>(attrs: &Attributes<'_>, id: &Id, layer: usize, ctx: Context<'_, S>)
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let metadata = attrs.metadata();
    BORN.set(Some(Born {
        id: id.into_u64(),
        layer,
        opening: gate::opening(),
        metadata,
    }));
    if !metadata.fields().is_empty() {
        keep_fields(attrs, id, &ctx);
    }
}

fn keep_fields<S>(attrs: &Attributes<'_>, id: &Id, ctx: &Context<'_, S>)
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let mut fields = SpanFields::default();
    attrs.record(&mut fields);
    if let Some(span) = ctx.span(id) {
        span.extensions_mut().insert(fields);
    }
}

#[inline(never)]
fn record_fields<S>(id: &Id, values: &Record<'_>, ctx: Context<'_, S>)
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let mut recorded = SpanFields::default();
    values.record(&mut recorded);
    // The deferred case: a span already entered on this thread gets the fields on
    // its open event.
    let _ = OPEN.try_with(|open| {
        if let Ok(mut open) = open.try_borrow_mut() {
            if let Some((_, trace)) = open.iter_mut().rev().find(|(open_id, _)| open_id == id) {
                apply(trace, &recorded.0);
            }
        }
    });
    if let Some(span) = ctx.span(id) {
        let mut extensions = span.extensions_mut();
        match extensions.get_mut::<SpanFields>() {
            Some(fields) => {
                for (key, value) in recorded.0 {
                    fields.set(key, value);
                }
            }
            None => extensions.insert(recorded),
        }
    }
}

#[inline(never)]
fn enter_span<S>(id: &Id, layer: usize, ctx: Context<'_, S>)
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    // Spans can only hold fields their callsite declares: the many that declare none
    // need nothing of the registry but their metadata.
    let trace = match Born::metadata(id, layer) {
        Some(metadata) if metadata.fields().is_empty() => begin(id, metadata),
        _ => {
            let Some(span) = ctx.span(id) else { return };
            let metadata = span.metadata();
            if metadata.fields().is_empty() {
                // Let go of the span before writing, not after.
                drop(span);
                begin(id, metadata)
            } else {
                let mut trace = begin(id, metadata);
                if let Some(fields) = span.extensions().get::<SpanFields>() {
                    apply(&mut trace, &fields.0);
                }
                trace
            }
        }
    };
    let _ = OPEN.try_with(|open| {
        if let Ok(mut open) = open.try_borrow_mut() {
            open.push((id.clone(), trace));
            OPEN_COUNT.set(open.len());
        }
    });
}

#[inline(never)]
fn exit_span(id: &Id) {
    // Exits may come out of order (a guard moved, an async span exited on another
    // path): close exactly the matching entry.
    let closed = OPEN.try_with(|open| {
        let mut open = open.try_borrow_mut().ok()?;
        let entry = match open.last() {
            // The innermost, nearly always: no search, and no move of what follows.
            Some((last, _)) if last == id => open.pop()?,
            _ => {
                let at = open.iter().rposition(|(open_id, _)| open_id == id)?;
                open.remove(at)
            }
        };
        OPEN_COUNT.set(open.len());
        Some(entry)
    });
    // Ended here, outside the borrow: ending the event never re-enters the stack.
    if let Ok(Some((_, trace))) = closed {
        if let Some((event, at)) = trace.end() {
            let id = id.into_u64();
            LAST_EXIT.set(Some(Exited { id, event, at }));
        }
    }
}

/// Opens the event of an entry of span `id`.
#[inline(always)]
fn begin(id: &Id, metadata: &Metadata<'_>) -> Trace {
    // Every entry is tagged with its span: the collector turns a span entered more
    // than once (a span held across `.await`) into a task. Registry ids never use
    // the top bit, which marks prof's own futures.
    Trace::begin_poll(metadata.name(), id.into_u64() & !PROF_TASK)
}

#[inline(never)]
fn close_span(id: &Id) {
    let id = id.into_u64();
    let at = match LAST_EXIT.take() {
        Some(last) if last.id == id => {
            if buffer::close_span_at_end(&last.event) {
                return;
            }
            last.at
        }
        other => {
            LAST_EXIT.set(other);
            clock::now()
        }
    };
    // Later entries of the same id belong to another span.
    buffer::sample(CLOSED, at, id & !PROF_TASK);
}

#[inline(never)]
fn record_event(event: &Event<'_>) {
    // prof's own warnings describe the profile; recording them into it would have
    // them warn about themselves.
    if event.metadata().target() == crate::log::TARGET {
        return;
    }
    let mut trace = Trace::instant(event.metadata().name());
    if trace.is_recording() {
        let mut fields = SpanFields::default();
        event.record(&mut fields);
        apply(&mut trace, &fields.0);
    }
}
