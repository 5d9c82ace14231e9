//! How the view is drawn: header, steps, input, memory, GPUs, hosts and top ops, top
//! to bottom in order of what matters most, so a small terminal loses the least
//! (at 60×20 the step time still shows).

use std::time::Instant;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row, Sparkline, Table, Wrap};
use ratatui::Frame;

use crate::top::state::{bytes, ms, recording_text, App, Host, Link};

const BOLD: Style = Style::new().add_modifier(Modifier::BOLD);
const DIM: Style = Style::new().fg(Color::DarkGray);

/// What a host's connection reads as.
pub fn link_text(host: &Host, now: Instant) -> String {
    match &host.link {
        Link::Connecting => "connecting".into(),
        Link::Connected => "connected".into(),
        Link::Reconnecting { at, .. } => format!(
            "reconnecting in {} s",
            at.saturating_duration_since(now).as_secs_f64().ceil() as u64
        ),
        Link::MonitorOnly => "connected (Monitor only)".into(),
        Link::NoLiveView(_) => "no live view".into(),
    }
}

fn link_style(link: &Link) -> Style {
    match link {
        Link::Connected => Style::new().fg(Color::Green),
        Link::MonitorOnly => Style::new().fg(Color::Cyan),
        Link::Connecting => Style::new().fg(Color::Yellow),
        Link::Reconnecting { .. } | Link::NoLiveView(_) => Style::new().fg(Color::Red),
    }
}

/// Draws the whole view.
pub fn draw(frame: &mut Frame<'_>, app: &App, now: Instant) {
    let host = app.host();
    let several = app.hosts.len() > 1;
    let [header, steps, spark, facts, hosts, ops, footer] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(1),
        Constraint::Length(2),
        Constraint::Length(4),
        Constraint::Length(if several {
            app.hosts.len() as u16 + 1
        } else {
            0
        }),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    draw_header(frame, header, app, now);
    match (&host.link, &host.last, &host.monitor) {
        (Link::NoLiveView(line), _, _) => {
            frame.render_widget(
                Paragraph::new(line.as_str()).wrap(Wrap { trim: true }),
                Rect {
                    height: steps.height + spark.height + facts.height,
                    ..steps
                },
            );
        }
        (Link::MonitorOnly, _, Some(text)) => {
            frame.render_widget(
                Paragraph::new(text.as_str()).wrap(Wrap { trim: true }),
                Rect {
                    height: steps.height + spark.height + facts.height,
                    ..steps
                },
            );
        }
        _ => {
            draw_steps(frame, steps, spark, host);
            draw_facts(frame, facts, host);
        }
    }
    if several {
        draw_hosts(frame, hosts, app, now);
    }
    draw_ops(frame, ops, app);
    draw_footer(frame, footer, app);
    if app.help {
        draw_help(frame);
    }
}

fn draw_header(frame: &mut Frame<'_>, area: Rect, app: &App, now: Instant) {
    let host = app.host();
    let step = host
        .last
        .as_ref()
        .and_then(|s| s.step)
        .map_or("step -".to_owned(), |s| format!("step {s}"));
    let capture = host
        .last
        .as_ref()
        .map_or("no capture".to_owned(), recording_text);
    let first = Line::from(vec![
        Span::styled("prof-top ", BOLD),
        Span::raw(format!("{} ", host.address)),
        Span::styled(link_text(host, now), link_style(&host.link)),
        Span::raw(format!("  {step}  {capture}")),
        Span::styled(if app.paused { "  PAUSED" } else { "" }, BOLD),
    ]);
    let second = match (&host.link, &host.last) {
        (Link::Reconnecting { why, .. }, _) => Line::styled(why.clone(), DIM),
        (_, Some(s)) => Line::styled(
            format!(
                "{}  {} watching  {} frames dropped{}",
                s.host,
                s.watchers,
                s.frames_dropped,
                own_capture(app)
            ),
            DIM,
        ),
        _ => Line::styled(own_capture(app).trim_start().to_owned(), DIM),
    };
    frame.render_widget(Paragraph::new(vec![first, second]), area);
}

/// The capture started with `c`, as the header says it.
fn own_capture(app: &App) -> String {
    match &app.capture {
        None => String::new(),
        Some(c) => match &c.outcome {
            None => format!(
                "  capturing {:.1}/{:.1} s",
                c.started.elapsed().as_secs_f64(),
                c.duration_ms as f64 / 1000.0
            ),
            Some(outcome) => format!("  {outcome}"),
        },
    }
}

fn draw_steps(frame: &mut Frame<'_>, line: Rect, spark: Rect, host: &Host) {
    let snapshot = host.last.as_ref();
    let text = match snapshot.and_then(|s| s.step_times.map(|t| (s, t))) {
        Some((s, t)) => format!(
            "Step time  last {}  p50 {}  p90 {}  max {}  {:.1} steps/s",
            ms(t.last_ns as f64),
            ms(t.p50_ns as f64),
            ms(t.p90_ns as f64),
            ms(t.max_ns as f64),
            s.steps_per_second
        ),
        None => "Step time  - (no step finished yet: annotate steps with step_num)".into(),
    };
    frame.render_widget(Paragraph::new(Line::styled(text, BOLD)), line);
    let data: Vec<u64> = snapshot
        .map(|s| s.steps.iter().map(|st| st.duration_ns).collect())
        .unwrap_or_default();
    // The latest steps that fit, one a column.
    let skip = data.len().saturating_sub(spark.width as usize);
    frame.render_widget(
        Sparkline::default()
            .data(&data[skip..])
            .style(Style::new().fg(Color::Cyan)),
        spark,
    );
}

fn draw_facts(frame: &mut Frame<'_>, area: Rect, host: &Host) {
    let snapshot = host.last.as_ref();
    let input = match snapshot.and_then(|s| s.input) {
        Some(i) => format!(
            "Input      {:.1}% of step time in input annotations (min {:.1}%, max {:.1}%)",
            i.avg_percent, i.min_percent, i.max_percent
        ),
        None => "Input      - (no input annotation seen)".into(),
    };
    let memory = match snapshot.and_then(|s| s.memory) {
        Some(m) => {
            let host = match (m.host_in_use, m.host_peak) {
                (Some(u), Some(p)) => format!("host {} in use, peak {}", bytes(u), bytes(p)),
                _ => "host n/a (no TrackingAllocator)".into(),
            };
            let rss = m.rss.map_or("n/a".into(), bytes);
            format!("Memory     {host}  RSS {rss}")
        }
        None => "Memory     -".into(),
    };
    // The watched host's GPUs, as its process reads them through NVML.
    let gpus = match snapshot {
        None => "GPUs       -".to_owned(),
        Some(s) if s.gpus.is_empty() => format!(
            "GPUs       n/a ({})",
            s.gpus_unavailable.as_deref().unwrap_or("none reported")
        ),
        Some(s) => {
            let each: Vec<String> = s
                .gpus
                .iter()
                .map(|g| {
                    let busy = g.busy_percent.map_or("n/a".into(), |b| format!("{b}%"));
                    let memory = match (g.memory_used, g.memory_total) {
                        (Some(u), Some(t)) => format!("{}/{}", bytes(u), bytes(t)),
                        _ => "n/a".into(),
                    };
                    format!("{}: kernel running {busy} of the time, {memory}", g.index)
                })
                .collect();
            format!("GPUs       {}", each.join("; "))
        }
    };
    // The process's own kernels, as its device tracer saw them since the last frame.
    let kernels = match snapshot {
        None => "Kernels    -".to_owned(),
        Some(s) if s.kernels.is_empty() => format!(
            "Kernels    {}",
            s.kernels_unavailable.as_deref().unwrap_or("-")
        ),
        Some(s) => {
            let each: Vec<String> = s
                .kernels
                .iter()
                .map(|k| {
                    let per_second = |n: f64| {
                        if k.interval_ns == 0 {
                            0.0
                        } else {
                            n * 1e9 / k.interval_ns as f64
                        }
                    };
                    format!(
                        "{}: {:.1}% of the time in its kernels, {:.0}/s",
                        k.device,
                        per_second(k.kernel_ns as f64) / 1e7,
                        per_second(k.kernels as f64)
                    )
                })
                .collect();
            format!("Kernels    {}", each.join("; "))
        }
    };
    frame.render_widget(
        Paragraph::new(vec![
            Line::raw(input),
            Line::raw(memory),
            Line::raw(gpus),
            Line::raw(kernels),
        ]),
        area,
    );
}

fn draw_hosts(frame: &mut Frame<'_>, area: Rect, app: &App, now: Instant) {
    let straggler = app.straggler();
    let rows: Vec<Row<'_>> = app
        .hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let s = h.last.as_ref();
            let mark = if straggler == Some(i) {
                "◀ slowest"
            } else {
                ""
            };
            let row = Row::new(vec![
                format!(
                    "{}{}",
                    if i == app.selected { "> " } else { "  " },
                    h.address
                ),
                link_text(h, now),
                s.and_then(|s| s.step).map_or("-".into(), |n| n.to_string()),
                s.and_then(|s| s.step_times)
                    .map_or("-".into(), |t| ms(t.p50_ns as f64)),
                s.map_or("-".into(), |s| format!("{:.1}", s.steps_per_second)),
                mark.to_owned(),
            ]);
            if straggler == Some(i) {
                row.style(Style::new().fg(Color::Red).add_modifier(Modifier::BOLD))
            } else {
                row
            }
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Fill(3),
            Constraint::Length(18),
            Constraint::Length(9),
            Constraint::Length(9),
            Constraint::Length(8),
            Constraint::Length(9),
        ],
    )
    .header(Row::new(["HOST", "STATE", "STEP", "P50", "STEPS/S", ""]).style(BOLD));
    frame.render_widget(table, area);
}

fn draw_ops(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let window = app
        .host()
        .last
        .as_ref()
        .map_or(0.0, |s| s.window_ns as f64 / 1e9);
    let filter = if app.filtering || !app.filter.is_empty() {
        format!(
            "  filter: {}{}",
            app.filter,
            if app.filtering { "_" } else { "" }
        )
    } else {
        String::new()
    };
    let title = format!(
        " Top ops, last {window:.1} s, by {}{filter} ",
        app.sort.title()
    );
    let rows: Vec<Row<'_>> = app
        .ops()
        .into_iter()
        .map(|o| {
            Row::new(vec![
                o.name.clone(),
                ms(o.self_ns as f64),
                format!("{:.1}%", o.share * 100.0),
                o.count.to_string(),
            ])
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Fill(1),
            Constraint::Length(10),
            Constraint::Length(7),
            Constraint::Length(8),
        ],
    )
    .header(Row::new(["NAME", "SELF", "SHARE", "COUNT"]).style(BOLD))
    .block(Block::new().borders(Borders::TOP).title(title));
    frame.render_widget(table, area);
}

fn draw_footer(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let text = if app.filtering {
        "type to filter  Enter done  Esc done"
    } else {
        "q quit  p pause  c capture  s sort  / filter  ? help"
    };
    frame.render_widget(Paragraph::new(Line::styled(text, DIM)), area);
}

fn draw_help(frame: &mut Frame<'_>) {
    let area = frame.area();
    let width = area.width.min(56);
    let height = area.height.min(12);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let lines = [
        "q       quit",
        "p       pause (updates wait; connections go on)",
        "c       capture (capture-profile into --logdir)",
        "s       sort ops: self time, count, name",
        "/       filter ops by name; Esc clears",
        "j/k     next/previous host",
        "?       this help",
        "",
        "Utilisation of a GPU is NVML's: the share of time at",
        "least one kernel ran.",
    ];
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines.iter().map(|l| Line::raw(*l)).collect::<Vec<_>>())
            .block(Block::bordered().title(" help ")),
        popup,
    );
}
