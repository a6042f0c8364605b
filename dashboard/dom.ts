/**
 * Builds the page with DOM calls only: text goes in as text nodes and
 * attributes through setAttribute, never through innerHTML, so a job's data or
 * an error message cannot become markup.
 */

export type Child = Node | string | number | null | undefined | false;

type Handler = (event: Event) => void;
export type Props = Record<string, string | number | boolean | Handler | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, ''), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

/** replaceChildren that skips absent children, as h() does. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

const SVG = 'http://www.w3.org/2000/svg';

export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number> = {}, ...children: Child[]): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  append(element, children);
  return element;
}

/** A link within the dashboard: its target is always a `#/…` route built from encoded segments. */
export function routeLink(text: Child, ...segments: string[]): HTMLAnchorElement {
  return h('a', { href: routeHref(...segments) }, text);
}

export const routeHref = (...segments: string[]): string => `#/${segments.map(encodeURIComponent).join('/')}`;
