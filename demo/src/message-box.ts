// The pages' message box: a bold context and a detail, or hidden when context is null. Shared by
// the digits and the Shakespeare pages.
export function showMessageIn(box: HTMLElement, context: string | null, detail = ''): void {
  box.hidden = context === null;
  box.replaceChildren();
  if (context === null) return;
  const b = document.createElement('b');
  b.textContent = context;
  box.append(b, document.createTextNode(detail));
}
