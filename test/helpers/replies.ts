/** The reply fixtures (test/fixtures/replies/*.eml) and what extraction gives for each (docs/extracted-text.md). */

/** the folder of the raw messages, one `<name>.eml` each */
export const REPLY_FIXTURES = `${import.meta.dir}/../fixtures/replies`

/** What each fixture's extracted_text is, exactly. */
export const EXPECTED_TEXT: Record<string, string> = {
  gmail: 'Hi Alice,\n\nThe numbers look right to me. Ship the report on Friday.\n\nThanks,\nBob',
  'outlook-desktop': 'Hello Alice,\n\nWe are happy to renew for another year at the same rate. I will send the signed copy tomorrow.\n\nKind regards,\nCarol',
  'outlook-web': "Thursday works. Let's meet at the Italian place at 12:30.\n\nDan",
  'apple-mail': 'I added two slides on hiring at the end. The rest is unchanged.\n\nErin',
  thunderbird: 'Saturday night is fine. I will take the backups at 22:00 and start the migration at 23:00.\n\nFrank',
  'reply-above': 'Paid this morning; the transfer reference is FAB-55821.\n\nGrace',
  'inline-reply': 'Booked: the large room on the second floor, 9:00 to 17:00.\nYes, I will take the first hour.\nThanks!\n\nHenry',
  forwarded:
    'Alice, this is the order for the office chairs. Can you track it?\n\n---------- Forwarded message ---------\n' +
    'From: Shop Orders <orders@shop.example>\nDate: Mon, Nov 23, 2026 at 4:55 PM\nSubject: Your order has shipped\nTo: <ivan.petrov@gmail.com>\n\n\n' +
    'Your order 77-41230 has shipped.\nCarrier: DHL, tracking number 00340434161234567890.\nExpected delivery: Thursday, November 26.',
  french: "Bonjour Alice,\n\nLa traduction est prête, je vous l'envoie cet après-midi.\n\nCordialement,\nJuliette",
  german: 'Hallo Alice,\n\nvielen Dank für das Angebot. Wir nehmen den Wartungsvertrag für zwei Jahre.\n\nMit freundlichen Grüßen\nKlaus Schmidt',
  spanish: 'Sí, reserva dos noches, del 3 al 5 de diciembre. Gracias.',
  'html-only': 'They are lovely! Please send the one from the lighthouse in full size.\n\nMona',
  'all-quote': '',
}

/** Words of each fixture's quoted earlier message (or signature) that extracted_text must not hold. */
export const QUOTED: Record<string, string[]> = {
  gmail: ['Could you check', 'wrote:', 'Head of Finance'],
  'outlook-desktop': ['Our contract ends', 'Sent:', 'From:'],
  'outlook-web': ['are you free for lunch', 'Sent:', '________'],
  'apple-mail': ['Anything to add', 'wrote:'],
  thunderbird: ['Can we move', 'wrote:', 'Posteo Test GmbH'],
  'reply-above': ['Original Message', 'due on the 30th'],
  'inline-reply': ['Can you book the room', 'wrote:', 'Lunch is on us'],
  forwarded: [],
  french: ['a écrit', 'Où en est'],
  german: ['Gesendet:', 'anbei unser Angebot'],
  spanish: ['Enviado desde mi iPhone', 'escribió', 'reservo el hotel'],
  'html-only': ['Here are the photos', 'wrote:'],
  'all-quote': ['parking permit'],
}
