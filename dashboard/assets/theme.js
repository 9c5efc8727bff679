/* queuelens theme: <html data-theme="light|dark"> from the header's Auto / Light / Dark
   buttons (dashboard/app.py: .ql-theme, button[data-theme-choice]).

   The choice is remembered in localStorage ("queuelens-theme"); "auto" (the default, and
   whatever the store holds that is not a known choice) follows the browser's
   prefers-color-scheme, live. Dash loads asset scripts before its renderer draws the page,
   so the attribute is set before any of the app is drawn: no flash of the other theme.
   Every change dispatches "queuelens:theme" on document (chart_theme.js re-colours the
   Plotly charts on it). */
(function () {
  "use strict";
  var KEY = "queuelens-theme";
  var CHOICES = ["auto", "light", "dark"];
  var root = document.documentElement;
  var media = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  function storedChoice() {
    try {
      var value = window.localStorage.getItem(KEY);
      return CHOICES.indexOf(value) >= 0 ? value : "auto";
    } catch (e) {  // storage disabled: the choice lasts for this page only
      return "auto";
    }
  }

  function resolve(choice) {
    if (choice === "auto") {
      return media && media.matches ? "dark" : "light";
    }
    return choice;
  }

  function markButtons(choice) {
    var buttons = document.querySelectorAll(".ql-theme button[data-theme-choice]");
    for (var i = 0; i < buttons.length; i++) {
      var pressed = buttons[i].getAttribute("data-theme-choice") === choice ? "true" : "false";
      if (buttons[i].getAttribute("aria-pressed") !== pressed) {
        buttons[i].setAttribute("aria-pressed", pressed);
      }
    }
  }

  function apply(choice) {
    var theme = resolve(choice);
    var changed = root.getAttribute("data-theme") !== theme;
    root.setAttribute("data-theme-choice", choice);
    root.setAttribute("data-theme", theme);
    markButtons(choice);
    if (changed) {
      document.dispatchEvent(new CustomEvent("queuelens:theme", {detail: {theme: theme}}));
    }
  }

  apply(storedChoice());

  document.addEventListener("click", function (event) {
    var target = event.target;
    var button = target && target.closest ? target.closest(".ql-theme button[data-theme-choice]")
      : null;
    if (!button) {
      return;
    }
    var choice = button.getAttribute("data-theme-choice");
    if (CHOICES.indexOf(choice) < 0) {
      return;
    }
    try {
      window.localStorage.setItem(KEY, choice);
    } catch (e) { /* not remembered; still applied */ }
    apply(choice);
  });

  if (media) {
    var follow = function () {
      if (root.getAttribute("data-theme-choice") === "auto") {
        apply("auto");
      }
    };
    if (media.addEventListener) {
      media.addEventListener("change", follow);
    } else if (media.addListener) {
      media.addListener(follow);
    }
  }

  // the buttons are drawn by Dash after this script: mark the pressed one when they appear
  // (and when another tab changes the stored choice)
  new MutationObserver(function () {
    markButtons(root.getAttribute("data-theme-choice") || "auto");
  }).observe(document.documentElement, {childList: true, subtree: true});
  window.addEventListener("storage", function (event) {
    if (event.key === KEY) {
      apply(storedChoice());
    }
  });
})();
