// Click-through for charts whose points carry a same-site URL in customdata (the per-problem heat map).
(function () {
  "use strict";
  function bind(gd, tries) {
    if (typeof gd.on !== "function") {  // Plotly attaches .on while it plots; wait for it
      if (tries < 50) { setTimeout(function () { bind(gd, tries + 1); }, 100); }
      return;
    }
    gd.on("plotly_click", function (event) {
      var point = event && event.points && event.points[0];
      var url = point && point.customdata;
      if (typeof url === "string" && url.charAt(0) === "/" && url.charAt(1) !== "/") { window.location.assign(url); }
    });
    gd.setAttribute("data-click-bound", "true");
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-click-through] .plotly-graph-div").forEach(function (gd) { bind(gd, 0); });
  });
})();
