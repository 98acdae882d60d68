(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("memeval-data").textContent);
  var rows = data.rows;
  rows.forEach(function (r, i) {
    r.i = i;
    r.t = [r.id, r.q, r.g, r.p || "", r.c].join(" ").toLowerCase();
  });
  var mems = data.memories;
  var table = document.getElementById("qtable");
  var tbody = table.tBodies[0];
  var fCat = document.getElementById("f-category");
  var fSt = document.getElementById("f-status");
  var fSys = document.getElementById("f-system");
  var fText = document.getElementById("f-text");
  var count = document.getElementById("q-count");
  var more = document.getElementById("q-more");
  var state = {key: null, dir: 1, limit: data.page};

  function fill(select, values) {
    values.forEach(function (v) {
      var o = document.createElement("option");
      o.value = v; o.textContent = v; select.appendChild(o);
    });
  }
  function uniq(key) {
    var seen = {}, out = [];
    rows.forEach(function (r) {
      var v = r[key];
      if (!Object.prototype.hasOwnProperty.call(seen, v)) { seen[v] = 1; out.push(v); }
    });
    return out;
  }
  fill(fCat, uniq("c")); fill(fSt, uniq("st")); fill(fSys, uniq("s"));

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }
  function num(v) { return (v === null || v === undefined) ? "-" : v.toFixed(3); }

  function expand(details, r) {
    var box = el("div");
    var parts = [];
    Object.keys(r.sc).forEach(function (k) { parts.push(k + "=" + num(r.sc[k])); });
    box.appendChild(el("div", "scores: " + (parts.join(", ") || "-")));
    if (r.e) { box.appendChild(el("div", "error: " + r.e, "q-error")); }
    if (r.j) { box.appendChild(el("div", "judge: " + r.j, "q-judge")); }
    if (r.jr) { box.appendChild(el("div", "judge reasoning: " + r.jr, "q-reasoning")); }
    if (r.m.length) {
      var title = "memories (" + r.m.length +
        (r.mn > r.m.length ? " of " + r.mn + " stored" : "") + ")";
      box.appendChild(el("div", title));
      var ol = el("ol");
      r.m.forEach(function (ref) {
        var mem = mems[ref[0]];
        var li = el("li", null, "q-memory");
        if (mem[1]) { li.appendChild(el("span", "[" + mem[1] + "] ", "mem-date")); }
        li.appendChild(document.createTextNode(mem[0]));
        if (ref[1] !== null) { li.appendChild(el("span", " (score " + ref[1] + ")", "mem-date")); }
        ol.appendChild(li);
      });
      box.appendChild(ol);
    } else {
      box.appendChild(el("div", "no memories stored"));
    }
    details.appendChild(box);
  }

  function cmp(a, b) {
    var k = state.key, x = a[k], y = b[k];
    var xn = (x === null || x === undefined || x === "");
    var yn = (y === null || y === undefined || y === "");
    if (xn && yn) { return a.i - b.i; }
    if (xn) { return 1; }
    if (yn) { return -1; }
    if (typeof x === "number" && typeof y === "number") {
      return x === y ? a.i - b.i : (x - y) * state.dir;
    }
    var c = String(x).localeCompare(String(y), undefined, {numeric: true});
    return c === 0 ? a.i - b.i : c * state.dir;
  }

  function render() {
    var cat = fCat.value, st = fSt.value, sys = fSys.value;
    var text = fText.value.trim().toLowerCase();
    var list = rows.filter(function (r) {
      if (cat && r.c !== cat) { return false; }
      if (st && r.st !== st) { return false; }
      if (sys && r.s !== sys) { return false; }
      if (text && r.t.indexOf(text) < 0) { return false; }
      return true;
    });
    if (state.key) { list.sort(cmp); }
    var shown = list.slice(0, state.limit);
    var body = document.createElement("tbody");
    shown.forEach(function (r) {
      var tr = el("tr");
      tr.appendChild(el("td", r.s));
      tr.appendChild(el("td", r.c));
      tr.appendChild(el("td", r.id));
      tr.appendChild(el("td", r.q, "text"));
      tr.appendChild(el("td", r.g, "text"));
      tr.appendChild(el("td", r.p === null ? "(none)" : r.p, "text"));
      var stc = el("td"); stc.appendChild(el("span", r.st, "st st-" + r.st)); tr.appendChild(stc);
      tr.appendChild(el("td", num(r.pm), "num"));
      var dc = el("td");
      var d = el("details");
      d.appendChild(el("summary", r.m.length + " memories" + (r.jr ? ", judge" : "")));
      expand(d, r);
      dc.appendChild(d); tr.appendChild(dc);
      body.appendChild(tr);
    });
    table.replaceChild(body, tbody);
    tbody = body;
    count.textContent = "showing " + shown.length + " of " + list.length + " matching (" +
      rows.length + " in total)";
    more.hidden = shown.length >= list.length;
  }

  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
    var key = th.getAttribute("data-key");
    if (!key) { return; }
    function sortBy() {
      if (state.key === key) { state.dir = -state.dir; } else { state.key = key; state.dir = 1; }
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (o) {
        if (o.getAttribute("data-key")) { o.setAttribute("aria-sort", "none"); }
      });
      th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
      render();
    }
    th.addEventListener("click", sortBy);
    th.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); sortBy(); }
    });
  });
  [fCat, fSt, fSys].forEach(function (s) {
    s.addEventListener("change", function () { state.limit = data.page; render(); });
  });
  fText.addEventListener("input", function () { state.limit = data.page; render(); });
  more.addEventListener("click", function () { state.limit += data.page; render(); });
  render();
  document.body.setAttribute("data-memeval-ready", "1");
})();
