// The hosted checkout on a real processor (checkout/pages.py): the payer types the card into Stripe.js's
// own field, Stripe.js sends it from this browser to Stripe, and the form posts only Stripe's token
// (tok_...), so the card number never reaches moneyrail.
//
// It uses only what both Stripe.js v3 and localstripe's fake of it (the tests' Stripe) offer:
// Stripe(publishableKey).elements().create("card"), mount, and createToken. Bank authentication
// (Stripe.js handleCardAction) is not run here: the server lets such a card go and says so.
(function () {
  "use strict";

  var mountPoint = document.getElementById("card-element");
  var errors = document.getElementById("card-errors");
  var tokenField = document.getElementById("card-token");
  if (!mountPoint || !errors || !tokenField) {
    return;
  }
  var form = mountPoint.closest("form");

  function showError(message) {
    errors.textContent = message;
    errors.hidden = false;
  }

  if (typeof Stripe !== "function") {
    showError("The card field could not be loaded. Nothing was charged; reload the page to try again.");
    return;
  }
  var stripe = Stripe(mountPoint.getAttribute("data-publishable-key"));
  var card = stripe.elements().create("card");
  card.mount(mountPoint);

  function newCardChosen() {
    var choice =
      form.querySelector("input[name=payment_method]:checked") ||
      form.querySelector("input[type=hidden][name=payment_method]");
    return !choice || choice.value === "new";
  }

  var sending = false;
  form.addEventListener("submit", function (event) {
    if (!newCardChosen() || tokenField.value) {
      return; // a saved card, or the token is already there: the form goes as it is
    }
    event.preventDefault();
    if (sending) {
      return;
    }
    sending = true;
    errors.hidden = true;
    Promise.resolve()
      .then(function () {
        return stripe.createToken(card);
      })
      .then(
        function (result) {
          if (result && result.token && result.token.id) {
            tokenField.value = result.token.id;
            form.submit();
            return;
          }
          sending = false;
          var problem = result && result.error && result.error.message;
          showError(problem || "Check your card details and try again. Nothing was charged.");
        },
        function () {
          sending = false;
          showError("Enter your card details. Nothing was charged.");
        }
      );
  });
})();
