// hcp-edge dashboard: renders the agent's snapshots (server-sent events,
// falling back to polling). Read-only: it sends nothing but GET requests.
"use strict";
(function () {
  var seq = 0;
  var $ = function (id) { return document.getElementById(id); };
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function fmt(v) {
    if (typeof v !== "number" || !isFinite(v)) return String(v);
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(2);
    return String(Math.round(v * 1000) / 1000);
  }
  function time(s) {
    if (!s) return "";
    var d = new Date(s);
    return isNaN(d) ? s : d.toLocaleString();
  }
  function rows(tbody, list, cells) {
    tbody.replaceChildren();
    list.forEach(function (x) {
      var tr = el("tr");
      cells(x).forEach(function (c) {
        var td = el("td", c.cls, c.text);
        if (c.attr) Object.keys(c.attr).forEach(function (k) { td.setAttribute(k, c.attr[k]); });
        tr.appendChild(td);
      });
      if (x && x.channel) tr.setAttribute("data-channel", x.channel);
      tbody.appendChild(tr);
    });
  }

  // The rig's layout (snapshot.layout, from the configuration): its gas
  // lines, outputs and inputs by the names the configuration gives them.
  function layoutInputs(lay) {
    var m = {};
    ((lay && lay.inputs) || []).forEach(function (i) { m[i.name] = i; });
    return m;
  }

  function renderLatch(st) {
    var b = $("latch");
    b.setAttribute("data-latched", String(!!st.latched));
    if (st.latched) {
      var last = (st.trips || [])[(st.trips || []).length - 1];
      $("latch-title").textContent = "LATCHED — only safe actions pass";
      $("latch-cause").textContent = "cause: " + st.latch_reason + (last && last.reason ? " (" + last.reason + ")" : "");
      $("latch-cause").setAttribute("data-cause", st.latch_reason || "");
      $("latch-time").textContent = st.trip_at ? "since " + time(st.trip_at) : "";
      $("latch-help").textContent = "Clear the condition, then reset at the rig: hcp-edge reset --operator NAME";
    } else {
      $("latch-title").textContent = "Not latched";
      $("latch-cause").textContent = "";
      $("latch-cause").setAttribute("data-cause", "");
      $("latch-time").textContent = "";
      $("latch-help").textContent = "";
    }
  }

  function renderInputs(st, lay) {
    var ins = layoutInputs(lay);
    var ul = $("inputs");
    ul.replaceChildren();
    var relay = el("li", st.relay === "energised" ? "state-ok" : "state-na", "interlock relay: " + st.relay);
    relay.setAttribute("data-input", "relay");
    ul.appendChild(relay);
    Object.keys(st.values || {}).sort().forEach(function (k) {
      if (k.indexOf("input.") !== 0) return;
      var name = k.slice(6), v = st.values[k], def = ins[name] || {};
      // The level a healthy, armed rig reads, where the configuration asks for one.
      var want = def.healthy;
      var cls = want === undefined || want === null ? "" : (v === want ? "state-ok" : "state-bad");
      var where = [def.channel, def.role].filter(function (x) { return !!x; }).join(", ");
      var li = el("li", cls, name.replace(/_/g, " ") + (where ? " (" + where + ")" : "") + ": " + (v ? "yes" : "no"));
      li.setAttribute("data-input", name);
      li.setAttribute("data-value", String(v));
      ul.appendChild(li);
    });
  }

  function renderMargins(st) {
    rows($("margins").tBodies[0], st.margins || [], function (m) {
      var span = m.max - m.min, cls, word;
      if (!m.applies) { cls = "state-na"; word = "n/a"; }
      else if (m.margin < 0) { cls = "state-bad"; word = "OUTSIDE " + fmt(m.margin); }
      // Near a limit: within 10 % of the span below the max, or above a
      // min that is not zero (a flow or a setpoint at 0 is at rest, not near a limit).
      else if (span > 0 && (m.max - m.value < 0.1 * span || (m.min > 0 && m.value - m.min < 0.1 * span))) {
        cls = "state-warn"; word = "near " + fmt(m.margin);
      }
      else { cls = "state-ok"; word = fmt(m.margin); }
      var pos = span > 0 ? Math.max(0, Math.min(1, (m.value - m.min) / span)) : 0;
      return [
        { text: m.channel },
        { text: fmt(m.value) + " " + m.unit, cls: "num", attr: { "data-value": m.value } },
        { text: fmt(m.min) + " … " + fmt(m.max), cls: "num" },
        { text: word, cls: "num " + cls, attr: { "data-applies": String(!!m.applies) } },
        { bar: pos, na: !m.applies },
        { text: m.context || "", cls: "sub" }
      ];
    });
    // The position bars (built after, as rows() only writes text).
    var trs = $("margins").tBodies[0].rows;
    (st.margins || []).forEach(function (m, i) {
      var td = trs[i].cells[4], span = m.max - m.min;
      var pos = span > 0 ? Math.max(0, Math.min(1, (m.value - m.min) / span)) : 0;
      var bar = el("div", "bar" + (m.applies ? "" : " na")), mark = el("span");
      mark.style.left = (pos * 156) + "px";
      bar.title = fmt(m.min) + " … " + fmt(m.max) + " " + m.unit;
      bar.appendChild(mark);
      td.replaceChildren(bar);
    });
    var keys = Object.keys(st.readings || {}).sort();
    rows($("readings").tBodies[0], keys, function (k) {
      return [{ text: k, attr: { "data-reading": k } }, { text: st.readings[k] }];
    });
  }

  function onOff(v) { return v === undefined ? "?" : (v ? "on" : "off"); }

  // The heated zones (a rig of several), gas lines and outputs of the
  // layout, each with its live reading.
  function renderLayout(st, lay) {
    var vals = st.values || {};
    rows($("gases").tBodies[0], (lay && lay.gases) || [], function (g) {
      var f = vals["flow." + g.gas + ".sccm"], sp = vals["flow." + g.gas + ".setpoint_sccm"];
      return [
        { text: g.gas, attr: { "data-gas": g.gas } },
        { text: g.hazard, cls: g.hazard === "inert" ? "" : "state-warn", attr: { "data-hazard": g.hazard } },
        { text: g.controller + (g.full_scale ? " (" + g.full_scale + ")" : "") },
        { text: f === undefined ? "—" : fmt(f) + " sccm", cls: "num" },
        { text: sp === undefined ? "—" : fmt(sp) + " sccm", cls: "num" },
        { text: g.valve ? g.valve + ": " + onOff(vals["switch." + g.valve]) : "", attr: { "data-valve": g.valve || "" } }
      ];
    });
    var zs = (lay && lay.zones) || [];
    $("zones").hidden = !zs.length; // a rig of one: its zone is the furnace reading
    rows($("zones").tBodies[0], zs, function (z) {
      var v = function (k, u) { var x = vals[z.name + "." + k]; return x === undefined ? "—" : fmt(x) + u; };
      return [
        { text: z.name, attr: { "data-zone": z.name } },
        { text: z.controller },
        { text: v("pv_c", " °C"), cls: "num", attr: { "data-value": String(vals[z.name + ".pv_c"]) } },
        { text: v("setpoint_c", " °C"), cls: "num" },
        { text: v("output_pct", " %"), cls: "num" },
        { text: onOff(vals[z.name + ".heater_enabled"]) }
      ];
    });
    rows($("outputs").tBodies[0], (lay && lay.outputs) || [], function (o) {
      var v = vals["switch." + o.name];
      return [
        { text: o.name, attr: { "data-output": o.name } },
        { text: o.channel },
        { text: o.role || (o.gas ? o.gas + " line" : "") },
        { text: o.safe },
        { text: onOff(v), cls: v === undefined ? "state-na" : "", attr: { "data-value": String(v) } }
      ];
    });
  }

  function renderHealth(st) {
    var ul = $("health");
    ul.replaceChildren();
    Object.keys(st.healthy || {}).sort().forEach(function (k) {
      var li = el("li", st.healthy[k] ? "state-ok" : "state-bad", k + (st.healthy[k] ? " ok" : " SILENT"));
      ul.appendChild(li);
    });
    var u = st.uplink;
    $("uplink").textContent = u ? "uplink: " + (u.url || "") + (u.connected ? " connected" : " not connected") +
      ", outbox " + (u.backlog || 0) + " waiting" : "uplink: none configured";
    var d = st.disk, p = $("disk"), mib = function (n) { return ((n || 0) / 1048576).toFixed(1) + " MiB"; };
    p.setAttribute("data-low", d ? String(!!d.low) : "unknown");
    p.className = d && d.low ? "sub state-bad" : "sub";
    p.textContent = !d ? "" : d.low ?
      "DISK LOW: command intake paused (" + (d.reason || "") + "); free " + mib(d.free_bytes) + ", watermark " + mib(d.watermark_bytes) :
      "disk: free " + mib(d.free_bytes) + " of " + mib(d.total_bytes) + ", watermark " + mib(d.watermark_bytes);
  }

  function renderTrips(st) {
    var list = (st.trips || []).slice().reverse();
    rows($("trips").tBodies[0], list, function (t) {
      return [{ text: time(t.at) }, { text: t.trip }, { text: t.procedure }, { text: t.channel }, { text: t.reason }];
    });
  }

  var shown = {}; // session id -> the key it was last drawn with
  function renderSessions(list) {
    var box = $("sessions");
    if (!list || list.length === 0) return;
    if (box.firstElementChild && box.firstElementChild.tagName === "P") box.replaceChildren();
    var ids = {};
    list.forEach(function (s) { ids[s.session_id] = true; });
    Array.prototype.slice.call(box.children).forEach(function (d) { // older than the list: gone
      var id = d.getAttribute("data-session");
      if (id && !ids[id]) { box.removeChild(d); delete shown[id]; }
    });
    list.forEach(function (s) {
      var key = s.state + "|" + JSON.stringify(s.progress || null) + "|" + (s.plots || []).length + "|" + JSON.stringify(s.question || null);
      var div = box.querySelector('[data-session="' + CSS.escape(s.session_id) + '"]');
      if (div && shown[s.session_id] === key) return;
      shown[s.session_id] = key;
      var fresh = el("div", "session");
      fresh.setAttribute("data-session", s.session_id);
      fresh.setAttribute("data-state", s.state);
      var head = el("div");
      head.appendChild(el("strong", "", s.capability + " "));
      head.appendChild(el("span", "pill" + (s.state === "RUNNING" ? " process" : ""), s.state));
      head.appendChild(el("span", "sub", "  " + s.session_id + " · " + s.risk_level + " · caller " + s.caller_id + " · " + time(s.created_at)));
      fresh.appendChild(head);
      if (s.progress) {
        var p = el("div"), bar = el("span", "progress"), fill = el("span");
        fill.style.width = Math.max(0, Math.min(100, s.progress.percent || 0)) + "%";
        bar.appendChild(fill);
        p.appendChild(bar);
        p.appendChild(el("span", "sub", "  " + s.progress.stage + " " + fmt(s.progress.percent || 0) + " % — " + (s.progress.message || "")));
        fresh.appendChild(p);
      }
      if (s.question) { // blocked at a recipe's question: answered with hcp-edge answer at the rig
        var q = el("div", "question");
        q.appendChild(el("strong", "", "awaiting an answer: "));
        q.appendChild(el("span", "", s.question.question + " (" + s.question.answer + "; before " + time(s.question.deadline) + ", then it aborts)"));
        q.appendChild(el("div", "sub", "hcp-edge answer " + s.session_id + " " + s.question.checkpoint_id + " VALUE"));
        fresh.appendChild(q);
      }
      if (s.plots && s.plots.length) {
        var plots = el("div", "plots");
        s.plots.forEach(function (pl) {
          var a = el("a");
          a.href = pl.url;
          a.target = "_blank";
          a.rel = "noopener";
          var img = el("img", "plot");
          img.src = pl.url;
          img.alt = pl.name;
          img.setAttribute("data-plot", pl.name);
          a.appendChild(img);
          plots.appendChild(a);
        });
        fresh.appendChild(plots);
      } else if (s.plots_note) {
        fresh.appendChild(el("div", "sub", s.plots_note));
      }
      if (div) box.replaceChild(fresh, div); else box.appendChild(fresh);
    });
    // Newest first, as listed (moving a node keeps its images).
    list.forEach(function (s) {
      var d = box.querySelector('[data-session="' + CSS.escape(s.session_id) + '"]');
      if (d && d !== box.lastElementChild) box.appendChild(d);
    });
  }

  function renderAudit(list) {
    rows($("audit").tBodies[0], (list || []).slice().reverse(), function (a) {
      return [{ text: a.seq, cls: "num" }, { text: time(a.at) }, { text: a.kind }, { text: a.session_id || "" },
        { text: a.detail, cls: "detail" }];
    });
  }

  function render(snap) {
    if (snap.error) { $("conn").textContent = "agent error: " + snap.error; return; }
    var st = snap.status || {};
    var act = $("rig-activity");
    act.textContent = st.activity || "unknown";
    act.className = "pill" + (st.activity && st.activity !== "idle" ? " process" : "");
    renderLatch(st);
    renderInputs(st, snap.layout);
    renderLayout(st, snap.layout);
    renderMargins(st);
    renderHealth(st);
    renderTrips(st);
    renderSessions(snap.sessions);
    renderAudit(snap.audit);
    seq++;
    var u = $("updated");
    u.textContent = time(snap.at);
    u.setAttribute("data-seq", String(seq));
    u.setAttribute("data-at", snap.at || "");
  }

  function poll() {
    fetch("/api/state", { cache: "no-store" }).then(function (r) { return r.json(); })
      .then(function (s) { $("conn").textContent = "polling"; render(s); })
      .catch(function (e) { $("conn").textContent = "agent unreachable (" + e + ")"; })
      .finally(function () { setTimeout(poll, 2000); });
  }

  if (window.EventSource) {
    var es = new EventSource("/api/events");
    es.onopen = function () { $("conn").textContent = "live"; };
    es.onmessage = function (ev) { try { render(JSON.parse(ev.data)); } catch (e) { $("conn").textContent = "bad update: " + e; } };
    es.onerror = function () { $("conn").textContent = "reconnecting…"; };
  } else {
    poll();
  }
})();
