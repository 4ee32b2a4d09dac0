// tesseract.js-core ships no types; only what formats/ocr-engine.ts uses of one build is declared
// (the Emscripten module and its binding of Tesseract's `TessBaseAPI`).
declare module 'tesseract.js-core/tesseract-core-simd-lstm.js' {
  export interface TessApi {
    Init(dataPath: null, lang: string, oem: number): number;
    SetVariable(name: string, value: string): boolean;
    /** Reads the file `/input`; 0 when it could be read. */
    SetImageFile(exifOrientation: number, angle: number): number;
    Recognize(monitor: null): number;
    GetUTF8Text(): string;
    MeanTextConf(): number;
    Clear(): void;
    End(): void;
  }

  export interface TessModule {
    TessBaseAPI: new () => TessApi;
    FS: { writeFile(path: string, data: Uint8Array): void; unlink(path: string): void };
    destroy(object: TessApi): void;
  }

  const factory: (options: {
    TesseractProgress(percent: number): void;
    print(line: string): void;
    printErr(line: string): void;
  }) => Promise<TessModule>;
  export default factory;
}
