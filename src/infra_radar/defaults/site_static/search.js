/* infra-radar search: filters the index that search-index.js assigned to window.RADAR_INDEX.
   Tokens follow publish/search.py: lower-case Latin words and numbers, Chinese as character bigrams.
   An item matches when every query token is a prefix of one of its keys. Results are built with
   textContent only: no string from the index is ever parsed as HTML. */
(function () {
  "use strict";
  var LIMIT = 100;
  var LATIN = /[a-z0-9]+/g;
  var HAN = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+/g;

  function tokens(text) {
    var lower = String(text || "").toLowerCase();
    var found = lower.match(LATIN) || [];
    var runs = lower.match(HAN) || [];
    runs.forEach(function (run) {
      if (run.length === 1) { found.push(run); return; }
      for (var i = 0; i + 1 < run.length; i++) { found.push(run.slice(i, i + 2)); }
    });
    return found;
  }

  function rows() {
    var index = window.RADAR_INDEX;
    if (!index || !index.items) { return null; }
    var at = {};
    index.fields.forEach(function (name, i) { at[name] = i; });
    return index.items.map(function (r) {
      return { page: r[at.page], ref: r[at.ref], title: r[at.title], priority: r[at.priority],
               date: r[at.date], author: r[at.author], keys: " " + r[at.keys] };
    });
  }

  var RANK = { P0: 0, P1: 1, P2: 2, none: 3 };

  function search(all, query) {
    var wanted = tokens(query);
    if (!wanted.length) { return []; }
    var hits = all.filter(function (row) {
      return wanted.every(function (tok) { return row.keys.indexOf(" " + tok) !== -1; });
    });
    hits.sort(function (a, b) {
      var pa = RANK[a.priority] === undefined ? 9 : RANK[a.priority];
      var pb = RANK[b.priority] === undefined ? 9 : RANK[b.priority];
      if (pa !== pb) { return pa - pb; }
      return a.date < b.date ? 1 : a.date > b.date ? -1 : 0;
    });
    return hits;
  }

  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (m, key) { return key in values ? values[key] : m; });
  }

  function show(list, status, hits, query) {
    while (list.firstChild) { list.removeChild(list.firstChild); }
    if (!query) { return; }
    var text = hits.length ? fill(status.dataset.count, { n: hits.length }) : status.dataset.none;
    if (hits.length > LIMIT) { text += fill(status.dataset.limit, { limit: LIMIT }); }
    status.textContent = text;
    hits.slice(0, LIMIT).forEach(function (row) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.setAttribute("href", row.page);
      a.textContent = row.ref + " " + row.title;
      var meta = document.createElement("span");
      meta.className = "meta";
      meta.textContent = [row.priority, row.date, row.author].filter(Boolean).join(" · ");
      li.appendChild(a);
      li.appendChild(meta);
      list.appendChild(li);
    });
  }

  function start() {
    var form = document.getElementById("search-form");
    var input = document.getElementById("q");
    var list = document.getElementById("results");
    var status = document.getElementById("search-status");
    if (!form || !input || !list || !status) { return; }
    var all = rows();
    if (all === null) { status.textContent = status.dataset.missing; return; }
    function run() { show(list, status, search(all, input.value), input.value.trim()); }
    form.addEventListener("submit", function (event) { event.preventDefault(); run(); });
    input.addEventListener("input", run);
    var initial = new URLSearchParams(window.location.search).get("q");
    if (initial) { input.value = initial; run(); }
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
}());
