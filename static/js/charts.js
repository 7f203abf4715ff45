// Draws the Plotly figures of the page once it is laid out, so each is sized to its card (drawing inline, while
// the grid was still being parsed, drew a chart wider than its card until the window was resized), keeps them
// sized to their cards, and makes points of a [data-click-through] chart (heat-map cells, speed-of-light points) that
// carry a same-site URL in customdata open it.
(function () {
  "use strict";
  // The mode bar covered chart titles on touch screens and phones: no mode bar there.
  var noModeBar = window.matchMedia("(hover: none), (pointer: coarse), (max-width: 700px)").matches;

  function bindClicks(gd) {
    gd.on("plotly_click", function (event) {
      var points = (event && event.points) || [];
      for (var i = 0; i < points.length; i++) {
        var url = points[i].customdata;
        if (typeof url === "string" && url.charAt(0) === "/" && url.charAt(1) !== "/") {
          window.location.assign(url);
          return;
        }
      }
    });
    gd.setAttribute("data-click-bound", "true");
  }

  function draw(gd) {
    var holder = document.getElementById(gd.getAttribute("data-spec"));
    if (!holder || typeof Plotly === "undefined") { return; }
    var spec = JSON.parse(holder.textContent);
    var config = spec.config || {};
    if (noModeBar) { config.displayModeBar = false; }
    Plotly.newPlot(gd, spec.data, spec.layout, config).then(function () {
      gd.setAttribute("data-drawn", "true");
      if (gd.closest("[data-click-through]")) { bindClicks(gd); }
    });
    if (typeof ResizeObserver === "function") {
      var width = gd.clientWidth;
      new ResizeObserver(function () {
        if (gd.clientWidth !== width) { width = gd.clientWidth; Plotly.Plots.resize(gd); }
      }).observe(gd);
    }
  }

  function drawAll() { document.querySelectorAll(".js-plotly[data-spec]").forEach(draw); }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", drawAll); } else { drawAll(); }
})();
