// binlog2ch's status page: polls status.json and fills the page. Every
// value goes in through textContent, never as markup: a MySQL table may be
// named "<script>...".
"use strict";

const every = 2000; // ms between polls
const $ = (id) => document.getElementById(id);
let timer = null;
let inflight = false;
let again = false; // the query changed during a poll

function text(id, s) { $(id).textContent = s; }

function el(tag, cls, s) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (s !== undefined) e.textContent = s;
  return e;
}

function count(n) { return Math.round(n || 0).toLocaleString("en-US"); }

function rate(r) {
  if (!r || r <= 0) return "0";
  if (r < 10) return r.toFixed(1);
  if (r < 1e4) return r.toFixed(0);
  if (r < 1e6) return (r / 1e3).toFixed(1) + "k";
  return (r / 1e6).toFixed(1) + "M";
}

function dur(sec) {
  sec = Math.max(0, sec || 0);
  if (sec < 10) return sec.toFixed(1) + "s";
  if (sec < 60) return sec.toFixed(0) + "s";
  const s = Math.floor(sec), h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60;
  const two = (x) => String(x).padStart(2, "0");
  if (h >= 24) return Math.floor(h / 24) + "d" + two(h % 24) + "h";
  if (h > 0) return h + "h" + two(m) + "m";
  return m + "m" + two(s % 60) + "s";
}

function ago(iso, now) {
  if (!iso) return "-";
  return dur((now - Date.parse(iso)) / 1000) + " ago";
}

function sum(obj) { return Object.values(obj || {}).reduce((a, b) => a + b, 0); }

function nonZero(obj) {
  const parts = Object.keys(obj || {}).sort().filter((k) => obj[k] > 0).map((k) => k + " " + count(obj[k]));
  return parts.length ? parts.join(", ") : "none";
}

function lagClass(sec) { return sec >= 300 ? "bad" : sec >= 10 ? "warn" : ""; }

function server(s, up, down) {
  let out = (s.product || "") + (s.version ? " " + s.version : "");
  if (s.addr && s.addr.length) out += " at " + s.addr.join(", ");
  if (s.id) out += " (" + s.id + ")";
  if (s.cluster) out += ", cluster " + s.cluster;
  return out + ": " + (s.up ? up : down);
}

function query() {
  const q = new URLSearchParams();
  q.set("sort", $("sort").value);
  q.set("limit", $("limit").value);
  const f = $("filter").value.trim();
  if (f) q.set("filter", f);
  return q.toString();
}

function render(st) {
  const now = Date.parse(st.generated_at);
  text("version", st.version || "");
  const state = $("state");
  if (!st.alive) { state.textContent = "not alive"; state.className = "badge bad"; }
  else if (st.ready) { state.textContent = "ready"; state.className = "badge ok"; }
  else { state.textContent = "not ready"; state.className = "badge warn"; }
  text("phase", st.phase || "");
  text("updated", "updated " + new Date(now).toLocaleTimeString("en-GB"));

  text("lag", dur(st.lag_seconds));
  $("lag").className = "value " + lagClass(st.lag_seconds);
  text("sourcelag", "reader " + dur(st.source_lag_seconds) + " behind MySQL");
  const t = st.totals;
  text("rate", rate(t.rows_per_second));
  text("ratewindow", st.rate_window_seconds ? "over the last " + dur(st.rate_window_seconds) : "measuring");
  text("rows", count(t.inserted + t.updated + t.deleted));
  text("ops", count(t.inserted) + " ins, " + count(t.updated) + " upd, " + count(t.deleted) + " del");
  text("queued", count(t.queued_rows));
  text("pending", t.tables_pending + " of " + t.tables + " tables");
  const errs = sum(st.errors);
  text("errors", count(errs));
  $("errors").className = "value " + (errs > 0 ? "warn" : "");
  text("errorstages", nonZero(st.errors));
  const fb = sum(st.native_fallbacks);
  text("fallbacks", count(fb));
  $("fallbacks").className = "value " + (fb > 0 ? "warn" : "");
  text("fallbackreasons", nonZero(st.native_fallbacks));
  const states = t.tables_by_state || {};
  const copying = (states.waiting || 0) + (states.copying || 0) + (states.swapping || 0);
  text("copies", count(copying));
  $("copies").className = "value " + (states.failed > 0 ? "bad" : "");
  const cs = ["copying", "waiting", "swapping", "failed"].filter((k) => states[k] > 0).map((k) => states[k] + " " + k);
  if (states.copying > 0) cs[0] += " (" + count(t.copy_rows_copied) + " of ~" + count(t.copy_rows_estimated) + " rows)";
  text("copystates", cs.length ? cs.join(", ") : "every table streams");
  const ws = t.writers || {};
  text("writers", count((ws.running || 0)) + " running");
  const wp = ["parked", "stopped"].filter((k) => ws[k] > 0).map((k) => ws[k] + " " + k);
  text("writerstates", wp.length ? wp.join(", ") : "none parked");
  const cc = st.cascade;
  text("cascade", cc ? (cc.state === "holding" ? "holding a run of " + cc.parent + "'s deletes" : "deriving the cascades of " + cc.parent + "'s rows") + ", for " + dur(Math.max(0, (now - Date.parse(cc.since)) / 1000)) : "none under way");
  text("uptime", dur(st.uptime_seconds));
  text("started", st.started_at ? "since " + st.started_at.replace("T", " ").replace(/\..*|Z$/, "") + " UTC" : "");

  text("source", server(st.source, "connected", "not connected"));
  text("target", server(st.target, "reachable", "not reachable"));
  text("read", st.read_position || "-");
  const cp = st.checkpoint;
  let cps = "-";
  if (cp) {
    cps = cp.position;
    if (cp.gtid) cps += ", GTID " + cp.gtid;
    if (cp.saved_at) cps += ", saved " + ago(cp.saved_at, now);
    if (cp.store) cps += ", in " + cp.store;
  }
  text("checkpoint", cps);
  const rt = st.binlog_retention;
  let rts = "-";
  let low = false;
  if (rt) {
    if (rt.gone) rts = rt.file + " is no longer on the server";
    else if (rt.unlimited && !rt.setting) rts = rt.file + ": the server purges no binlog by itself";
    else if (rt.unlimited && rt.active) rts = rt.file + " is the file the server writes, not purged before it is closed (" + rt.setting + ")";
    else if (rt.unlimited) rts = rt.file + ": not purged while the binlog does not grow (" + rt.setting + ")";
    else {
      rts = rt.headroom_seconds <= 0 ? rt.file + " is due: purged at the server's next rotation" : rt.file + " may be purged in " + dur(rt.headroom_seconds);
      rts += " (" + rt.setting + ")";
      low = rt.headroom_seconds < rt.margin_seconds;
      if (low) rts += ", below the " + dur(rt.margin_seconds) + " margin";
    }
    low = low || rt.gone;
  }
  text("retention", rts);
  $("retention").className = low ? "bad" : "";

  const snap = $("snapshot");
  snap.hidden = !(t.tables_copying > 0 || t.snapshot_rows_estimated > 0);
  if (!snap.hidden) {
    const est = Math.max(t.snapshot_rows_estimated, t.snapshot_rows_copied, 1);
    $("snapshotbar").style.width = (100 * t.snapshot_rows_copied / est).toFixed(1) + "%";
    text("snapshottext", count(t.snapshot_rows_copied) + " of ~" + count(t.snapshot_rows_estimated) + " rows, " + t.tables_copying + " tables to go");
  }

  document.querySelectorAll("th[data-sort]").forEach((th) => th.classList.toggle("sorted", th.dataset.sort === st.query.sort));
  const body = document.createElement("tbody");
  body.id = "tables";
  const errors = [], notes = [];
  for (const tb of st.tables) {
    const name = tb.database + "." + tb.table;
    const tr = document.createElement("tr");
    tr.dataset.table = name;
    const nameCell = el("td", "name", name);
    nameCell.title = name;
    tr.append(nameCell, el("td", "inserted", count(tb.inserted)), el("td", "updated", count(tb.updated)),
      el("td", "deleted", count(tb.deleted)), el("td", "rate", rate(tb.rows_per_second)),
      el("td", "lag " + lagClass(tb.lag_seconds), dur(tb.lag_seconds)), el("td", "queued", count(tb.queued_rows)),
      el("td", "flush", ago(tb.last_flush, now)));
    const p = stateCell(tb, name, now);
    if (tb.copy) notes.push(copyNote(name, tb.copy, now));
    const e = el("td", "errors " + (tb.errors > 0 ? "warn" : ""), count(tb.errors));
    if (tb.last_error) {
      e.title = tb.last_error;
      errors.push([name, tb.last_error_at, tb.last_error]);
    }
    let fb = tb.native_fallback || "-";
    if (tb.ambiguous_inserts) fb += " (ambiguous inserts: " + nonZero(tb.ambiguous_inserts) + ")";
    tr.append(p, e, el("td", "fallback " + (tb.native_fallback ? "warn" : ""), fb));
    body.append(tr);
  }
  $("tables").replaceWith(body);
  $("copynotes").replaceChildren(...notes);
  const le = $("lasterrors");
  le.replaceChildren(...errors.map(([n, at, msg]) => el("p", "", "last failed insert into " + n + " (" + ago(at, now) + "): " + msg)));
  let shown = st.tables.length + " of " + t.tables + " tables";
  if (st.query.filter) shown += ", " + st.tables_matched + " matching";
  text("shown", shown);
  document.body.dataset.loaded = "true";
}

// percent is n of est as a whole percentage, at most 100.
function percent(n, est) { return Math.min(100, 100 * n / est).toFixed(0) + "%"; }

// bar is a small progress bar of n of est.
function bar(n, est) {
  const b = el("span", "bar"), fill = el("div");
  fill.style.width = percent(n, est);
  b.append(fill);
  return b;
}

// stateCell is a table's state: streaming, its part of the initial
// snapshot, or its online copy (waiting, copying with progress,
// swapping, failed).
function stateCell(tb, name, now) {
  const state = tb.state || "streaming";
  const p = el("td", "state " + state);
  const s = tb.snapshot, c = tb.copy;
  if (state === "snapshot" && s) {
    if (s.state !== "done" && s.estimated > 0) p.append(bar(s.copied, s.estimated), document.createTextNode("snapshot " + percent(s.copied, s.estimated)));
    else p.textContent = "snapshot " + s.state;
    p.title = "initial snapshot: " + count(s.copied) + " of ~" + count(s.estimated) + " rows copied (" + s.state + ")";
  } else if (state === "copying" && c && c.estimated > 0) {
    p.append(bar(c.copied, c.estimated), document.createTextNode("copying " + percent(c.copied, c.estimated)));
  } else p.textContent = state;
  if (c) p.title = copyNote(name, c, now).textContent;
  if (tb.writer === "parked" || tb.writer === "stopped") {
    p.append(document.createTextNode(" (" + tb.writer + ")"));
    if (!c) p.title = tb.writer === "parked" ? "writer parked: quiet for a while, it starts again with the table's next rows" : "writer stopped";
  }
  return p;
}

// copyNote says why a table is copied, since when, where the copy is,
// and for a failed table its error and what to do.
function copyNote(name, c, now) {
  let s = name ? name + ": " : "";
  const why = (c.reason ? " (" + c.reason + (c.since ? ", asked for " + ago(c.since, now) : "") + ")" : "");
  switch (c.state) {
  case "copying":
    s += "copied online" + why + ": " + count(c.copied) + (c.estimated ? " of ~" + count(c.estimated) + " rows (" + percent(c.copied, c.estimated) + ")" : " rows") +
      " in its shadow table; the stream applies its events meanwhile";
    break;
  case "waiting":
    s += "waits for its online copy" + why + (c.copied > 0 ? "; " + count(c.copied) + " rows confirmed so far, which the copy resumes from" : "");
    break;
  case "swapping":
    s += "copy complete" + why + ", its shadow table being swapped in";
    break;
  case "failed":
    s += "FAILED" + why + ": " + (c.error || "") + ". Its binlog events are skipped: fix the cause, then binlog2ch resync -config FILE -tables " + (name || "db.table") + ", or restart binlog2ch";
    break;
  default:
    s += "online copy " + c.state + why;
  }
  if (c.error && c.state !== "failed") s += "; the last attempt failed and is tried again: " + c.error;
  return el("p", c.state === "failed" ? "bad" : "", s);
}

async function poll() {
  if (inflight) { again = true; return; }
  inflight = true;
  again = false;
  clearTimeout(timer);
  try {
    const resp = await fetch("status.json?" + query(), { cache: "no-store" });
    if (!resp.ok) throw new Error("HTTP " + resp.status);
    render(await resp.json());
    $("banner").hidden = true;
  } catch (err) {
    const b = $("banner");
    b.textContent = "The daemon does not answer (" + err.message + "); showing the last status it gave.";
    b.hidden = false;
  } finally {
    inflight = false;
    if (again) poll();
    else if (!$("pause").checked) timer = setTimeout(poll, every);
  }
}

function init() {
  const params = new URLSearchParams(location.search);
  if (params.has("filter")) $("filter").value = params.get("filter");
  if (params.has("sort")) $("sort").value = params.get("sort");
  if (params.has("limit")) $("limit").value = params.get("limit");
  $("sort").addEventListener("change", poll);
  $("limit").addEventListener("change", poll);
  let debounce = null;
  $("filter").addEventListener("input", () => { clearTimeout(debounce); debounce = setTimeout(poll, 250); });
  $("pause").addEventListener("change", () => { if (!$("pause").checked) poll(); else clearTimeout(timer); });
  document.querySelectorAll("th[data-sort]").forEach((th) => th.addEventListener("click", () => { $("sort").value = th.dataset.sort; poll(); }));
  poll();
}

init();
