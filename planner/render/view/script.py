"""The page's own style and script: draws the charts with Plotly and the tables in plain JavaScript
(sort by a click on a column, filter by text, pages of rows). Cells are written with ``textContent``,
never as HTML. When everything is drawn, ``window.viewReady`` holds the time since the page was
requested and ``window.viewDrawMs`` the time the drawing took (ms)."""

from __future__ import annotations

STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1f2328;background:#fff}
header{background:#24292f;color:#fff;padding:10px 24px}header h1{font-size:20px;margin:0}
header .ids{margin:4px 0 0;font-size:13px;color:#d0d7de;display:flex;flex-wrap:wrap;gap:4px 18px}header code{color:#fff;overflow-wrap:anywhere}
main{padding:8px 24px 40px;max-width:1400px}h2{margin-top:28px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.facts{display:flex;flex-wrap:wrap;gap:10px}.fact{border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;min-width:150px;max-width:300px}
.fact .value{font-size:20px;font-weight:600}.fact .name{font-size:13px;font-weight:600}.fact .def{font-size:12px;color:#57606a}
figure{margin:12px 0}figcaption{font-size:13px;color:#57606a;margin:4px 0}
table{border-collapse:collapse;font-size:13px}th,td{border-bottom:1px solid #d8dee4;padding:3px 10px;text-align:left}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}th{cursor:pointer;background:#f6f8fa;user-select:none}
.tools{margin:4px 0;font-size:13px}.tools input{width:260px;padding:3px}.tools button{margin:0 4px}
.note{color:#57606a;font-size:13px}.warn{color:#9a6700;font-weight:600}
"""

SCRIPT = r"""
(function () {
  "use strict";
  window.viewStart = performance.now();
  var D = JSON.parse(document.getElementById("view-data").textContent);
  function el(tag, cls, txt) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (txt !== undefined && txt !== null) e.textContent = txt;
    return e;
  }
  function show(v) {
    if (v === null || v === undefined) return "-";
    if (typeof v === "number") return Number.isInteger(v) ? v.toLocaleString("en-US") : v.toLocaleString("en-US", {maximumFractionDigits: 4});
    return String(v);
  }
  function table(root, spec) {
    var st = {q: "", col: -1, dir: 1, page: 0};
    var tools = el("div", "tools");
    var input = el("input"); input.type = "search"; input.placeholder = "filter rows (any column)";
    var count = el("span", "count");
    var prev = el("button", "prev", "previous"), next = el("button", "next", "next");
    var where = el("span", "where");
    tools.append(input, " ", count, " ", prev, where, next);
    var t = el("table"), head = el("thead"), body = el("tbody"), hr = el("tr");
    spec.columns.forEach(function (c, i) {
      var th = el("th", c.numeric ? "num" : "", c.label);
      th.addEventListener("click", function () { st.dir = st.col === i ? -st.dir : 1; st.col = i; st.page = 0; draw(); });
      hr.append(th);
    });
    head.append(hr); t.append(head, body); root.append(tools, t);
    input.addEventListener("input", function () { st.q = input.value.toLowerCase(); st.page = 0; draw(); });
    prev.addEventListener("click", function () { st.page -= 1; draw(); });
    next.addEventListener("click", function () { st.page += 1; draw(); });
    function cmp(a, b) {
      if (a === b) return 0; if (a === null) return 1; if (b === null) return -1;
      return (typeof a === "number" && typeof b === "number") ? a - b : String(a).localeCompare(String(b));
    }
    function draw() {
      var rows = spec.rows;
      if (st.q) rows = rows.filter(function (r) { return r.some(function (v) { return v !== null && String(v).toLowerCase().indexOf(st.q) >= 0; }); });
      if (st.col >= 0) rows = rows.map(function (r, i) { return [r, i]; }).sort(function (a, b) { return st.dir * cmp(a[0][st.col], b[0][st.col]) || a[1] - b[1]; }).map(function (p) { return p[0]; });
      var size = spec.page_size, pages = Math.max(1, Math.ceil(rows.length / size));
      st.page = Math.min(Math.max(st.page, 0), pages - 1);
      body.textContent = "";
      rows.slice(st.page * size, (st.page + 1) * size).forEach(function (r) {
        var tr = el("tr");
        r.forEach(function (v, i) { tr.append(el("td", spec.columns[i].numeric ? "num" : "", show(v))); });
        body.append(tr);
      });
      count.textContent = rows.length.toLocaleString("en-US") + " of " + spec.rows.length.toLocaleString("en-US") + " rows";
      where.textContent = " page " + (st.page + 1) + " of " + pages + " ";
      prev.disabled = st.page === 0; next.disabled = st.page >= pages - 1;
      Array.prototype.forEach.call(hr.children, function (th, i) { th.setAttribute("aria-sort", i === st.col ? (st.dir > 0 ? "ascending" : "descending") : "none"); });
    }
    draw();
  }
  var start = performance.now();
  document.querySelectorAll("[data-table]").forEach(function (div) { table(div, D.tables[div.dataset.table]); });
  var drawn = [];
  document.querySelectorAll("[data-chart]").forEach(function (div) {
    var c = D.charts[div.dataset.chart];
    drawn.push(Plotly.newPlot(div, c.data, c.layout, {displaylogo: false, responsive: true}));
  });
  Promise.all(drawn).then(function () { window.viewDrawMs = performance.now() - start; window.viewReady = performance.now(); });
})();
"""
