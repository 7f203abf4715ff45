// Marks each horizontal scroll box (a table's .table-scroll, a code listing's .source) whose content is wider than
// the box with data-scrolls, so the stylesheet can say so (a hint above the content, a border): phones hide
// scrollbars until touched, and a table cut at its box's edge read as clipped. A marked box also takes keyboard
// focus, so it can be scrolled with the arrow keys. Loaded on every page (templates/base.html).
(function () {
  "use strict";
  var SELECTOR = ".table-scroll, .source";

  function mark(box) {
    var wide = box.scrollWidth > box.clientWidth + 1;
    if (wide === box.hasAttribute("data-scrolls")) { return; }
    if (wide) {
      box.setAttribute("data-scrolls", "");
      box.setAttribute("tabindex", "0");
    } else {
      box.removeAttribute("data-scrolls");
      box.removeAttribute("tabindex");
    }
  }

  function markAll() { document.querySelectorAll(SELECTOR).forEach(mark); }

  function start() {
    markAll();
    if (typeof ResizeObserver === "function") {
      var observer = new ResizeObserver(function (entries) {
        entries.forEach(function (entry) { mark(entry.target); });
      });
      document.querySelectorAll(SELECTOR).forEach(function (box) {
        observer.observe(box);
        if (box.firstElementChild) { observer.observe(box.firstElementChild); }
      });
    } else {
      window.addEventListener("resize", markAll);
    }
    // A <details> opened later (the timing detail, the diff) lays out boxes that were not measured yet.
    document.addEventListener("toggle", markAll, true);
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
