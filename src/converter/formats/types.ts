/** What every format converter returns: the markdown and any problems worth telling the user. */
export interface Conversion {
  markdown: string;
  warnings: string[];
}
