// tr46 ships no types; only the call we make is declared.
declare module 'tr46' {
  interface ToAsciiOptions {
    checkHyphens?: boolean;
    checkBidi?: boolean;
    checkJoiners?: boolean;
    useSTD3ASCIIRules?: boolean;
    verifyDNSLength?: boolean;
    transitionalProcessing?: boolean;
    ignoreInvalidPunycode?: boolean;
  }
  const tr46: {
    /** UTS-46 ToASCII; null when processing records an error. */
    toASCII(domainName: string, options?: ToAsciiOptions): string | null;
  };
  export default tr46;
}
