// The status page's settings form (SPEC OPS-7): the live settings in
// groups, gateways as an ordered list (add, remove, move up and down) with
// a test button each that sends a real request through that gateway, a
// review of the change (old → new) before it applies with PUT and
// If-Match, each error of a refused change at its field, a stale version
// answered by reloading and saying so. Everything is written with
// textContent.
//
// The control token never travels in a URL: the user pastes it into the
// token field (--control-token, else the token the instance keeps in its
// registry entry, PID.control, 0600).
// A link with #token=… (the pool editor's way; a fragment is never sent
// to the server) fills the field too, and the page then takes the
// fragment out of the address bar and the history. The token stays in
// this tab's sessionStorage, so a reload keeps it and other tabs do not
// see it.
"use strict";
(function () {
  var box = document.getElementById("settings");
  if (!box) return;
  var TOKEN_KEY = "dual-proxy-control-token";
  var token = "";
  try { token = sessionStorage.getItem(TOKEN_KEY) || ""; } catch (e) { token = ""; }
  var fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash) {
    token = fromHash;
    history.replaceState(null, "", location.pathname + location.search);
  }
  keepToken(token);

  // The page's groups, by key; a key not named here shows under its
  // document group.
  var LEVELS = ["debug", "info", "warn", "error"];
  var S = { doc: null, gateways: [] };

  function keepToken(t) {
    try {
      if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* storage off: the token lives in this page only */ }
  }
  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "on") Object.keys(attrs.on).forEach(function (ev) { e.addEventListener(ev, attrs.on[ev]); });
      else if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, attrs[k]);
    });
    (kids || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  function api(method, path, body, hdr) {
    var h = Object.assign({ "X-Dual-Proxy-Client": "page" }, hdr || {});
    if (token) h.Authorization = "Bearer " + token;
    if (body != null) h["Content-Type"] = "application/json";
    return fetch(path, { method: method, headers: h, body: body == null ? undefined : JSON.stringify(body), cache: "no-store", credentials: "omit" })
      .then(function (r) { return r.json().then(function (b) { return { status: r.status, body: b || {} }; }, function () { return { status: r.status, body: {} }; }); },
        function (err) { return { status: 0, body: { error: "cannot reach the proxy: " + err.message } }; });
  }
  function msg(text, cls) {
    var m = document.getElementById("settings-msg");
    if (!m) return;
    m.textContent = text;
    m.className = cls || "";
  }
  function text(v) {
    if (Array.isArray(v)) return v.length ? v.join(", ") : "(none)";
    if (v === null || v === undefined) return "(not set)";
    if (v === "") return "''";
    return String(v);
  }

  // load reads the settings; pending (optional) are changes to show in
  // the form on top of them (kept across a stale-version reload).
  function load(pending) {
    return api("GET", "settings").then(function (r) {
      if (r.status !== 200) {
        box.textContent = "";
        box.appendChild(el("h2", { text: "Settings" }));
        box.appendChild(el("p", { class: "fail", id: "settings-msg", text: "settings: " + (r.body.error || "HTTP " + r.status) }));
        return false;
      }
      S.doc = r.body;
      S.gateways = ((pending && pending.gateway) || S.doc.settings.gateway || []).slice();
      render(pending || {});
      return true;
    });
  }

  function value(k, pending) {
    return Object.prototype.hasOwnProperty.call(pending, k.name) ? pending[k.name] : S.doc.settings[k.name];
  }

  function field(k, pending) {
    var v = value(k, pending), input;
    if (k.name === "gateway") return gatewayList();
    if (k.kind === "bool") {
      input = el("input", { type: "checkbox", id: "set-" + k.name, "data-key": k.name });
      input.checked = !!v;
    } else if (k.name === "log-level") {
      input = el("select", { id: "set-" + k.name, "data-key": k.name }, LEVELS.map(function (l) { return el("option", { value: l, text: l }); }));
      input.value = v;
    } else if (k.kind === "ms" || k.kind === "count") {
      input = el("input", { type: "number", step: "1", id: "set-" + k.name, "data-key": k.name, min: k.min, max: k.max });
      input.value = v;
    } else {
      input = el("input", { type: "text", size: k.kind === "list" ? 48 : 40, id: "set-" + k.name, "data-key": k.name, spellcheck: "false",
        placeholder: v === null ? "(not set)" : null });
      input.value = Array.isArray(v) ? v.join(", ") : v === null ? "" : String(v);
    }
    return input;
  }

  function gatewayList() {
    var list = el("ol", { id: "gw-list" });
    S.gateways.forEach(function (g, i) {
      var input = el("input", { type: "text", size: 48, "data-gateway": i, spellcheck: "false", "aria-label": "gateway " + (i + 1),
        on: { input: function () { S.gateways[i] = input.value; } } });
      input.value = g;
      var result = el("span", { class: "gw-result meta" });
      var move = function (d) {
        return function () {
          var j = i + d;
          if (j < 0 || j >= S.gateways.length) return;
          var t = S.gateways[i]; S.gateways[i] = S.gateways[j]; S.gateways[j] = t;
          rerender();
        };
      };
      list.appendChild(el("li", { "data-index": i }, [input,
        el("button", { type: "button", class: "gw-up", text: "↑", title: "try earlier", disabled: i === 0 ? "" : null, on: { click: move(-1) } }),
        el("button", { type: "button", class: "gw-down", text: "↓", title: "try later", disabled: i === S.gateways.length - 1 ? "" : null, on: { click: move(1) } }),
        el("button", { type: "button", class: "gw-remove", text: "remove", on: { click: function () { S.gateways.splice(i, 1); rerender(); } } }),
        el("button", { type: "button", class: "gw-test", text: "test", title: "send a request through this gateway alone", on: { click: function () { probe(input.value, result); } } }),
        result, el("span", { class: "ferr fail", "data-field": "gateway[" + i + "]" })]));
    });
    var add = el("input", { type: "text", size: 48, id: "gw-new", spellcheck: "false", placeholder: "http://host:port, https://…, socks5://host:port", "aria-label": "new gateway" });
    var addIt = function () {
      if (!add.value.trim()) return;
      S.gateways.push(add.value.trim());
      rerender();
    };
    add.addEventListener("keydown", function (ev) { if (ev.key === "Enter") { ev.preventDefault(); addIt(); } });
    list.appendChild(el("li", { class: "gw-add-row" }, [add, el("button", { type: "button", id: "gw-add", text: "add", on: { click: addIt } })]));
    return list;
  }

  // rerender draws the form again keeping what was typed.
  function rerender() { render(changes()); }

  function probe(gateway, out) {
    out.textContent = "testing…";
    out.className = "gw-result meta";
    out.removeAttribute("data-probe");
    api("POST", "settings/probe", { gateway: gateway }).then(function (r) {
      if (r.status === 200 && r.body.ok) {
        out.textContent = "works: " + r.body.latency_ms + " ms to " + r.body.target;
        out.className = "gw-result ok";
        out.setAttribute("data-probe", "ok");
      } else if (r.status === 401) {
        out.textContent = "needs the control token";
        out.className = "gw-result fail";
        out.setAttribute("data-probe", "fail");
        tokenError();
      } else {
        var e = (r.body.errors || [])[0];
        out.textContent = "fails: " + (e ? e.message : (r.body.error || "HTTP " + r.status));
        out.className = "gw-result fail";
        out.setAttribute("data-probe", "fail");
      }
    });
  }

  function tokenRow() {
    var input = el("input", { type: "password", id: "settings-token", size: 40, autocomplete: "off", spellcheck: "false", placeholder: "paste the control token",
      on: { input: function () { token = input.value.trim(); keepToken(token); document.getElementById("token-err").textContent = ""; } } });
    input.value = token;
    return el("div", { class: "setting token-row" }, [el("label", { for: "settings-token", text: "control token" }), input,
      el("span", { class: "meta hint", text: "changes and gateway tests need it: --control-token at start, else the one this instance keeps in its registry entry (PID.control, yours only)" }),
      el("span", { class: "ferr fail", id: "token-err" })]);
  }
  function tokenError() {
    var e = document.getElementById("token-err");
    if (e) e.textContent = token ? "this token is not the instance's" : "paste the control token first";
    var i = document.getElementById("settings-token");
    if (i) i.focus();
  }

  // hint is the key table's words for a key beside its field, else what
  // 0 or '' means for it (both as the document gives them).
  function hint(k) {
    if (k.hint) return k.hint;
    return k.zero ? k.zero_value + ": " + k.zero : "";
  }

  // groupsOf are the document's headings in its order, each with its keys
  // in the document's order; a key of a heading the document does not name
  // gets one of its own.
  function groupsOf(d) {
    var out = (d.groups || []).map(function (g) { return [g.name, g.title, []]; });
    d.keys.forEach(function (k) {
      var g = out.filter(function (x) { return x[0] === k.group; })[0];
      if (!g) out.push(g = [k.group, k.group, []]);
      g[2].push(k);
    });
    return out.filter(function (g) { return g[2].length; });
  }

  function render(pending) {
    var d = S.doc;
    var form = el("form", { id: "settings-form", novalidate: "", on: { submit: function (ev) { ev.preventDefault(); review(); } } });
    groupsOf(d).forEach(function (g) {
      var fs = el("fieldset", { "data-group": g[0] }, [el("legend", { text: g[1] })]);
      g[2].forEach(function (k) {
        fs.appendChild(el("div", { class: "setting", "data-setting": k.name }, [
          el("label", { for: k.name === "gateway" ? "gw-new" : "set-" + k.name, text: k.name }), field(k, pending),
          el("span", { class: "meta src", title: "where the value came from", text: d.sources[k.name] || "default" }),
          hint(k) ? el("span", { class: "meta hint", text: hint(k) }) : null,
          el("span", { class: "ferr fail", "data-field": k.name })]));
      });
      form.appendChild(fs);
    });
    form.appendChild(el("p", { class: "meta", text: "Not live (a restart changes them): listen " + d.fixed["listen-host"] + ":" + d.fixed["listen-port"] + ", log format " + d.fixed["log-format"] + "." +
      (d.config ? " A change is also written to the proxy: section of " + d.config + "." : "") }));
    form.appendChild(el("button", { type: "submit", id: "settings-review-btn", text: "review change" }));
    var old = document.getElementById("settings-msg");
    var keep = old ? [old.textContent, old.className] : ["", ""];
    box.textContent = "";
    box.appendChild(el("h2", { text: "Settings" }));
    box.appendChild(tokenRow());
    (d.file_errors || []).forEach(function (e) { box.appendChild(el("p", { class: "fail file-error", text: "config file not reloaded: " + e })); });
    (d.warnings || []).forEach(function (w) { box.appendChild(el("p", { class: "meta warning", text: w })); });
    box.appendChild(form);
    box.appendChild(el("div", { id: "settings-review" }));
    box.appendChild(el("p", { id: "settings-msg", role: "status" }));
    msg(keep[0], keep[1]);
    box.setAttribute("data-version", d.version);
    box.setAttribute("data-state", "loaded");
  }

  // changes are the form's values that differ from the document's.
  function changes() {
    var out = {};
    S.doc.keys.forEach(function (k) {
      var cur = S.doc.settings[k.name], v;
      if (k.name === "gateway") v = S.gateways.map(function (g) { return g.trim(); }).filter(Boolean);
      else {
        var input = box.querySelector('[data-key="' + k.name + '"]');
        if (!input) return;
        if (k.kind === "bool") v = input.checked;
        else if (k.kind === "ms" || k.kind === "count") v = input.value.trim() !== "" && isFinite(Number(input.value)) ? Number(input.value) : input.value;
        else if (k.kind === "list") v = input.value.split(",").map(function (s) { return s.trim(); }).filter(Boolean);
        else v = input.value.trim();
        // A key not set (null) shows as an empty field: left empty, it
        // stays not set ('' would mean none).
        if (cur === null && v === "") return;
      }
      if (JSON.stringify(v) !== JSON.stringify(cur)) out[k.name] = v;
    });
    return out;
  }

  // listDiff says what a list change does: added, removed, reordered.
  function listDiff(a, b) {
    var out = [];
    b.forEach(function (x) { if (a.indexOf(x) < 0) out.push("added " + x); });
    a.forEach(function (x) { if (b.indexOf(x) < 0) out.push("removed " + x); });
    var ka = a.filter(function (x) { return b.indexOf(x) >= 0; }), kb = b.filter(function (x) { return a.indexOf(x) >= 0; });
    if (JSON.stringify(ka) !== JSON.stringify(kb)) out.push("new order " + kb.join(", "));
    return out;
  }

  function clearErrors() {
    box.querySelectorAll(".ferr").forEach(function (e) { e.textContent = ""; });
    box.querySelectorAll(".invalid").forEach(function (e) { e.classList.remove("invalid"); e.removeAttribute("aria-invalid"); });
  }

  function review() {
    var ch = changes(), names = Object.keys(ch), rv = document.getElementById("settings-review");
    rv.textContent = "";
    clearErrors();
    if (!names.length) { msg("nothing changed"); return; }
    msg("");
    var ul = el("ul", { id: "settings-diff" });
    names.forEach(function (n) {
      var li = el("li", { "data-key": n }, [el("code", { text: n }), el("span", { class: "old", text: " " + text(S.doc.settings[n]) }), el("span", { text: " → " }), el("span", { class: "new", text: text(ch[n]) })]);
      if (Array.isArray(ch[n]) && Array.isArray(S.doc.settings[n])) {
        var sub = listDiff(S.doc.settings[n], ch[n]);
        if (sub.length) li.appendChild(el("ul", {}, sub.map(function (s) { return el("li", { text: s }); })));
      }
      ul.appendChild(li);
    });
    rv.appendChild(el("p", { text: "Apply " + (names.length === 1 ? "this change" : "these " + names.length + " changes") + "? New requests and tunnels take them at once; open tunnels and requests in flight keep their path." }));
    rv.appendChild(ul);
    rv.appendChild(el("button", { type: "button", id: "settings-apply", text: "apply", on: { click: function () { apply(ch); } } }));
    rv.appendChild(el("button", { type: "button", id: "settings-cancel", text: "cancel", on: { click: function () { rv.textContent = ""; box.setAttribute("data-state", "loaded"); } } }));
    box.setAttribute("data-state", "reviewed");
  }

  // markError shows one field error at its field (gateway[i] at that
  // gateway's row); false when the page has no such field.
  function markError(e) {
    var f = e.field || "";
    var at = f && (box.querySelector('.ferr[data-field="' + f + '"]') || box.querySelector('.ferr[data-field="' + f.replace(/\[\d+\]$/, "") + '"]'));
    if (!at) return false;
    at.textContent = at.textContent ? at.textContent + "; " + e.message : e.message;
    var m = /^gateway\[(\d+)\]$/.exec(f);
    var input = m ? box.querySelector('[data-gateway="' + m[1] + '"]') : box.querySelector('[data-key="' + f + '"]');
    if (input) { input.classList.add("invalid"); input.setAttribute("aria-invalid", "true"); }
    return true;
  }

  function apply(ch) {
    var btn = document.getElementById("settings-apply");
    if (btn) btn.disabled = true;
    api("PUT", "settings", ch, { "If-Match": '"' + S.doc.version + '"' }).then(function (r) {
      document.getElementById("settings-review").textContent = "";
      if (r.status === 200) {
        S.doc = r.body;
        S.gateways = (S.doc.settings.gateway || []).slice();
        msg("");
        render({});
        var sv = r.body.saved;
        var saved = sv ? (sv.error ? " (applied, but not written to " + sv.path + ": " + sv.error + ")" : ", written to " + sv.path) : "";
        msg("applied: " + Object.keys(ch).join(", ") + saved, "ok");
        box.setAttribute("data-state", "applied");
        if (window.dualProxyRefresh) window.dualProxyRefresh();
        return;
      }
      if (r.status === 400) {
        var loose = [];
        (r.body.errors || []).forEach(function (e) { if (!markError(e)) loose.push((e.field ? e.field + ": " : "") + e.message); });
        msg("not applied, nothing changed: " + (loose.length ? loose.join("; ") : "fix the fields marked"), "fail");
        var first = box.querySelector(".invalid");
        if (first) first.focus();
        box.setAttribute("data-state", "refused");
        return;
      }
      if (r.status === 401) {
        tokenError();
        msg("not applied: " + (token ? "the control token is wrong" : "paste the control token"), "fail");
        box.setAttribute("data-state", "refused");
        return;
      }
      if (r.status === 409) {
        load(ch).then(function (ok) {
          if (!ok) return;
          msg("not applied: the settings were changed elsewhere meanwhile. The form shows the current settings with your change on top; review and apply again.", "fail");
          box.setAttribute("data-state", "stale");
        });
        return;
      }
      msg("not applied: " + (r.body.error || "HTTP " + r.status), "fail");
      box.setAttribute("data-state", "refused");
    });
  }

  // follow re-reads the settings every 5 s: a change made elsewhere (the
  // CLI, the file, another page) or a failed reload of the file shows at
  // once when the form holds no edit of its own and no review is open;
  // otherwise the apply's stale version answers it.
  function follow() {
    if (!S.doc || document.getElementById("settings-review").textContent || Object.keys(changes()).length) return;
    api("GET", "settings").then(function (r) {
      if (r.status !== 200 || !S.doc) return;
      var same = r.body.version === S.doc.version && JSON.stringify(r.body.file_errors || []) === JSON.stringify(S.doc.file_errors || []);
      if (same || document.getElementById("settings-review").textContent || Object.keys(changes()).length) return;
      S.doc = r.body;
      S.gateways = (S.doc.settings.gateway || []).slice();
      render({});
    });
  }

  load();
  setInterval(follow, 5000);
})();
