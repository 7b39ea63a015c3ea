// After htmx swaps in a new page, move the focus to its heading so keyboard and screen reader
// users start reading the new page from its top, as after a full page load.
document.addEventListener('htmx:afterSettle', event => {
  if (event.detail.boosted) document.querySelector('main h1')?.focus()
})
