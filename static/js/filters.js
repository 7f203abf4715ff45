// Filter forms submit on change; the Apply button stays for keyboard and no-JS use.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form.js-autosubmit select").forEach(function (select) {
      select.addEventListener("change", function () { select.form.submit(); });
    });
  });
})();
