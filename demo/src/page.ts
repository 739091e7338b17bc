// What the digits and the Shakespeare pages share: the message box and the weights download.

/** The message box: a bold context and a detail, or hidden when context is null. */
export function showMessageIn(box: HTMLElement, context: string | null, detail = ''): void {
  box.hidden = context === null;
  box.replaceChildren();
  if (context === null) return;
  const b = document.createElement('b');
  b.textContent = context;
  box.append(b, document.createTextNode(detail));
}

/** Offers bytes as a file download (the link's URL is revoked once the browser has it). */
export function download(bytes: ArrayBuffer, fileName: string): void {
  const url = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
  const a = Object.assign(document.createElement('a'), { href: url, download: fileName });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
