// The status page's settings form (SPEC OPS-7): the live settings grouped
// as the document's keys say, gateways as an ordered list with a test
// button each, a review of the change before it applies, errors at their
// field. The control token comes from the URL fragment (#token=…), which
// the browser never sends to the server; `dual-proxy settings token`
// prints the link. Everything is written with textContent.
"use strict";
(function () {
  var box = document.getElementById("settings");
  if (!box) return;
  var token = new URLSearchParams(location.hash.slice(1)).get("token") || "";
  var GROUPS = { path: "Path", selection: "Selection", health: "Health check", timeouts: "Timeouts", replay: "Replay", logging: "Logging" };
  var S = { doc: null, gateways: [] };

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "on") Object.keys(attrs.on).forEach(function (ev) { e.addEventListener(ev, attrs.on[ev]); });
      else e.setAttribute(k, attrs[k]);
    });
    (kids || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  function api(method, path, body, hdr) {
    var h = Object.assign({ "X-Dual-Proxy-Client": "page" }, hdr || {});
    if (token) h.Authorization = "Bearer " + token;
    if (body != null) h["Content-Type"] = "application/json";
    return fetch(path, { method: method, headers: h, body: body == null ? undefined : JSON.stringify(body), cache: "no-store" })
      .then(function (r) { return r.json().then(function (b) { return { status: r.status, body: b }; }, function () { return { status: r.status, body: {} }; }); });
  }
  function msg(text, cls) {
    var m = document.getElementById("settings-msg");
    m.textContent = text;
    m.className = cls || "";
  }
  function text(v) { return Array.isArray(v) ? v.join(", ") : String(v); }

  function load(keepMsg) {
    return api("GET", "settings").then(function (r) {
      if (r.status !== 200) { msg("settings: HTTP " + r.status + " " + (r.body.error || ""), "fail"); return; }
      S.doc = r.body;
      S.gateways = (S.doc.settings.gateway || []).slice();
      render();
      if (!keepMsg) msg("");
    });
  }

  function field(k) {
    var v = S.doc.settings[k.name], input;
    if (k.name === "gateway") return gatewayList();
    if (k.kind === "bool") {
      input = el("input", { type: "checkbox", "data-key": k.name });
      input.checked = !!v;
    } else if (k.kind === "ms" || k.kind === "count") {
      input = el("input", { type: "number", step: "1", "data-key": k.name, min: k.min, max: k.max });
      input.value = v;
    } else {
      input = el("input", { type: "text", size: k.kind === "list" ? 40 : 32, "data-key": k.name });
      input.value = text(v);
    }
    return input;
  }

  function gatewayList() {
    var list = el("ol", { id: "gw-list" });
    S.gateways.forEach(function (g, i) {
      var input = el("input", { type: "text", size: 40, value: g, "data-gateway": i, on: { input: function () { S.gateways[i] = input.value; } } });
      var result = el("span", { class: "gw-result meta" });
      var move = function (d) { return function () { var j = i + d; if (j < 0 || j >= S.gateways.length) return; var t = S.gateways[i]; S.gateways[i] = S.gateways[j]; S.gateways[j] = t; render(); }; };
      list.appendChild(el("li", { "data-index": i }, [input,
        el("button", { type: "button", text: "↑", title: "earlier", on: { click: move(-1) } }),
        el("button", { type: "button", text: "↓", title: "later", on: { click: move(1) } }),
        el("button", { type: "button", class: "gw-remove", text: "remove", on: { click: function () { S.gateways.splice(i, 1); render(); } } }),
        el("button", { type: "button", class: "gw-test", text: "test", on: { click: function () { probe(input.value, result); } } }),
        result, el("span", { class: "ferr fail", "data-field": "gateway[" + i + "]" })]));
    });
    var add = el("input", { type: "text", size: 40, id: "gw-new", placeholder: "http://host:port, socks5://host:port …" });
    list.appendChild(el("li", { class: "gw-add-row" }, [add, el("button", { type: "button", id: "gw-add", text: "add", on: { click: function () {
      if (add.value.trim()) { S.gateways.push(add.value.trim()); render(); }
    } } })]));
    return list;
  }

  function probe(gateway, out) {
    out.textContent = "testing…";
    out.className = "gw-result meta";
    api("POST", "settings/probe", { gateway: gateway }).then(function (r) {
      if (r.status === 200 && r.body.ok) { out.textContent = "ok, " + r.body.latency_ms + " ms to " + r.body.target; out.className = "gw-result ok"; }
      else { out.textContent = r.body.error || ("HTTP " + r.status); out.className = "gw-result fail"; }
    });
  }

  function render() {
    var d = S.doc;
    var form = el("form", { id: "settings-form", on: { submit: function (ev) { ev.preventDefault(); review(); } } });
    Object.keys(GROUPS).forEach(function (g) {
      var keys = d.keys.filter(function (k) { return k.group === g; });
      if (!keys.length) return;
      var fs = el("fieldset", { "data-group": g }, [el("legend", { text: GROUPS[g] })]);
      keys.forEach(function (k) {
        fs.appendChild(el("div", { class: "setting", "data-setting": k.name }, [
          el("label", { text: k.name }), field(k),
          el("span", { class: "meta src", text: " " + (d.sources[k.name] || "default") }),
          el("span", { class: "ferr fail", "data-field": k.name })]));
      });
      form.appendChild(fs);
    });
    form.appendChild(el("p", { class: "meta", text: "Not live (restart to change): listen " + d.fixed["listen-host"] + ":" + d.fixed["listen-port"] + ", log format " + d.fixed["log-format"] + "." +
      (d.config ? " Changes are written back to the proxy: section of " + d.config + "." : "") }));
    form.appendChild(el("button", { type: "submit", id: "settings-review-btn", text: "review change" }));
    box.textContent = "";
    box.appendChild(el("h2", { text: "Settings" }));
    if (!token) box.appendChild(el("p", { class: "meta", id: "settings-token", text: "Changing settings needs this instance's control token: open the link `dual-proxy settings token` prints (/_dual-proxy/#token=…)." }));
    (d.file_errors || []).forEach(function (e) { box.appendChild(el("p", { class: "fail file-error", text: "config file not reloaded: " + e })); });
    box.appendChild(form);
    box.appendChild(el("div", { id: "settings-review" }));
    box.appendChild(el("p", { id: "settings-msg" }));
  }

  // changes are the form's values that differ from the document's.
  function changes() {
    var out = {};
    S.doc.keys.forEach(function (k) {
      var cur = S.doc.settings[k.name], v;
      if (k.name === "gateway") v = S.gateways.map(function (g) { return g.trim(); }).filter(Boolean);
      else {
        var input = box.querySelector('[data-key="' + k.name + '"]');
        if (k.kind === "bool") v = input.checked;
        else if (k.kind === "ms" || k.kind === "count") v = input.value.trim() === "" ? input.value : Number(input.value);
        else if (k.kind === "list") v = input.value.split(",").map(function (s) { return s.trim(); }).filter(Boolean);
        else v = input.value;
      }
      if (JSON.stringify(v) !== JSON.stringify(cur)) out[k.name] = v;
    });
    return out;
  }

  function review() {
    var ch = changes(), names = Object.keys(ch), rv = document.getElementById("settings-review");
    rv.textContent = "";
    box.querySelectorAll(".ferr").forEach(function (e) { e.textContent = ""; });
    if (!names.length) { msg("nothing changed"); return; }
    var ul = el("ul", { id: "settings-diff" });
    names.forEach(function (n) {
      ul.appendChild(el("li", { "data-key": n }, [el("code", { text: n }), el("span", { text: ": " + text(S.doc.settings[n]) + " → " + text(ch[n]) })]));
    });
    rv.appendChild(el("p", { text: "Apply these changes? New requests and tunnels take them at once; open tunnels keep their path." }));
    rv.appendChild(ul);
    rv.appendChild(el("button", { type: "button", id: "settings-apply", text: "apply", on: { click: function () { apply(ch); } } }));
    rv.appendChild(el("button", { type: "button", id: "settings-cancel", text: "cancel", on: { click: function () { rv.textContent = ""; } } }));
  }

  function apply(ch) {
    api("PUT", "settings", ch, { "If-Match": '"' + S.doc.version + '"' }).then(function (r) {
      document.getElementById("settings-review").textContent = "";
      if (r.status === 200) {
        S.doc = r.body; S.gateways = (S.doc.settings.gateway || []).slice(); render();
        var saved = r.body.saved ? (r.body.saved.error ? " (not written to " + r.body.saved.path + ": " + r.body.saved.error + ")" : " and written to " + r.body.saved.path) : "";
        msg("applied: " + Object.keys(ch).join(", ") + saved, "ok");
        if (window.dualProxyRefresh) window.dualProxyRefresh();
        return;
      }
      if (r.status === 400) {
        (r.body.errors || []).forEach(function (e) {
          var at = box.querySelector('.ferr[data-field="' + e.field + '"]') || box.querySelector('.ferr[data-field="' + e.field.replace(/\[\d+\]$/, "") + '"]');
          if (at) at.textContent = e.message; else msg(e.field + ": " + e.message, "fail");
        });
        if (!document.getElementById("settings-msg").textContent) msg("not applied: fix the fields marked", "fail");
        return;
      }
      if (r.status === 409) { load(true).then(function () { msg("the settings changed meanwhile; they are reloaded: redo the change", "fail"); }); return; }
      msg((r.body.error || "HTTP " + r.status), "fail");
    });
  }

  load();
})();
