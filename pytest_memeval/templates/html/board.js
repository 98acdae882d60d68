(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("board-data").textContent);
  var controls = document.getElementById("filters");
  if (!controls) { return; }
  controls.hidden = false;
  var fBench = document.getElementById("f-bench");
  var fTier = document.getElementById("f-tier");
  var fText = document.getElementById("f-text");
  function apply() {
    var bench = fBench.value, tier = fTier.value, text = fText.value.toLowerCase();
    document.querySelectorAll("section.key").forEach(function (sec) {
      var show = !bench || sec.getAttribute("data-bench") === bench;
      sec.hidden = !show;
      sec.querySelectorAll("tr[data-system]").forEach(function (tr) {
        var ok = (!tier || tr.getAttribute("data-tier") === tier) &&
          (!text || tr.getAttribute("data-system").toLowerCase().indexOf(text) >= 0);
        tr.hidden = !ok;
      });
    });
  }
  [fBench, fTier].forEach(function (s) { s.addEventListener("change", apply); });
  fText.addEventListener("input", apply);
  document.querySelectorAll("form.diff-pick").forEach(function (form) {
    var a = form.querySelector("select[name=a]"), b = form.querySelector("select[name=b]");
    var link = form.querySelector("a.diff-go"), msg = form.querySelector(".diff-msg");
    function update() {
      var page = data.diffs[a.value + "--" + b.value];
      if (page) { link.setAttribute("href", page); link.hidden = false; msg.textContent = ""; }
      else {
        link.hidden = true;
        msg.textContent = a.value === b.value ? "pick two different runs" :
          "no diff page for this pair: write it with memeval-board INPUTS --diff " +
          a.value + " " + b.value + " -o DIR";
      }
    }
    form.hidden = false;
    a.addEventListener("change", update); b.addEventListener("change", update);
    update();
  });
  document.body.setAttribute("data-board-ready", "1");
})();
