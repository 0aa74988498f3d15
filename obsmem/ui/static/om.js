// om ui: small enhancements only; every page works without this script.
"use strict";
document.addEventListener("submit", function (event) {
  var form = event.target;
  var question = form && form.getAttribute && form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});
document.addEventListener("keydown", function (event) {
  // "/" jumps to the search field, as on many sites.
  if (event.key !== "/" || /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName)) {
    return;
  }
  var field = document.querySelector('input[type="search"]');
  if (field) {
    event.preventDefault();
    field.focus();
  } else {
    window.location.href = "/search";
  }
});
