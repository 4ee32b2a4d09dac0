/**
 * Tesseract itself (tesseract.js-core: Tesseract and Leptonica compiled to WebAssembly, the engine
 * tesseract.js wraps), run in this thread. tesseract.js would start a worker thread per session
 * and copy every page into it (a structured clone, then a file in the worker's in-memory file
 * system that stays until the next page): on a 300-dpi A4 page that peaked ~65 MB above this.
 * The converter is a process of its own, so a page's recognition may hold its thread.
 */
import { readFile } from 'node:fs/promises';
import { setFlagsFromString } from 'node:v8';
import { gunzipSync } from 'node:zlib';

import type { TessApi, TessModule } from 'tesseract.js-core/tesseract-core-simd-lstm.js';

/** OEM 1: the LSTM recogniser only (the core built without the legacy engine, ~20 % smaller). */
const OEM_LSTM_ONLY = 1;
/** Page segmentation 3: full layout analysis (columns, paragraphs), not one uniform block. */
const PSM_AUTO = '3';
/** The file `SetImageFile` reads (the core's binding takes no path). */
const INPUT = '/input';

/**
 * V8 compiles WebAssembly twice by default: every function first with its baseline compiler
 * (Liftoff), then the hot ones again with TurboFan on background threads, while both codes and the
 * compilers' working memory are alive. For Tesseract that tier-up was 40–80 MB of the converter's
 * peak RSS, varying with the threads' timing, for no gain in CPU time: recognition is hot code, the
 * baseline tier gained nothing. Set before the module is compiled; it concerns only WebAssembly
 * compiled later in this process, which is a converter of its own (or a test).
 */
function compileWasmWithTurbofanOnly(): void {
  setFlagsFromString('--no-liftoff');
}

/** One engine: languages loaded once, then page after page. */
export class OcrEngine {
  private dpi = -1;

  private constructor(
    private readonly core: TessModule,
    private readonly api: TessApi,
  ) {}

  /**
   * Loads the core and the languages (`code` → its `.traineddata.gz`). Throws with tesseract's
   * own messages when initialisation fails.
   */
  static async start(languages: Map<string, string>): Promise<OcrEngine> {
    compileWasmWithTurbofanOnly();
    // The SIMD build: WebAssembly SIMD is in every Node this package supports (≥ 20).
    const factory = await import('tesseract.js-core/tesseract-core-simd-lstm.js');
    const messages: string[] = [];
    const core = await factory.default({
      TesseractProgress: () => undefined,
      // Tesseract's diagnostics would land on our stdout/stderr, which carry output by contract.
      print: () => undefined,
      printErr: (line) => {
        messages.push(line);
      },
    });
    for (const [code, file] of languages) {
      core.FS.writeFile(`/${code}.traineddata`, gunzipSync(await readFile(file)));
    }
    const api = new core.TessBaseAPI();
    const status = api.Init(null, [...languages.keys()].join('+'), OEM_LSTM_ONLY);
    // The models are in the engine's memory now; their file copies can go.
    for (const code of languages.keys()) core.FS.unlink(`/${code}.traineddata`);
    if (status !== 0) {
      core.destroy(api);
      throw new Error(messages.join('; ') || 'initialisation failed');
    }
    api.SetVariable('tessedit_pageseg_mode', PSM_AUTO);
    api.SetVariable('debug_file', '/dev/null');
    return new OcrEngine(core, api);
  }

  /**
   * Text and mean word confidence (0..100) of one image, given as a PGM file (Leptonica reads it
   * without decoding). `dpi` 0: tesseract estimates the resolution from the glyphs.
   */
  recognize(pgm: Uint8Array, dpi: number): { text: string; confidence: number } {
    if (dpi !== this.dpi) {
      this.api.SetVariable('user_defined_dpi', String(dpi));
      this.dpi = dpi;
    }
    this.core.FS.writeFile(INPUT, pgm);
    try {
      if (this.api.SetImageFile(1, 0) !== 0) throw new Error('the page image cannot be read');
    } finally {
      this.core.FS.unlink(INPUT); // Leptonica copied it into the engine's memory
    }
    try {
      this.api.Recognize(null);
      return { text: this.api.GetUTF8Text(), confidence: this.api.MeanTextConf() };
    } finally {
      this.api.Clear();
    }
  }

  /** Releases the engine (its memory goes with the module when nothing refers to it). */
  end(): void {
    this.api.End();
    this.core.destroy(this.api);
  }
}
