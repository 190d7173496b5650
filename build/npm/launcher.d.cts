// Types of build/npm/launcher.cjs's pure functions, for build/release.ts and the tests.
export declare const PLATFORMS: readonly string[];
export declare function platformKey(platform: string, arch: string, libc?: string): string | null;
export declare function detectLibc(): "glibc" | "musl";
export declare function packageName(key: string): string;
export declare function binaryName(key: string): string;
export declare function assetName(key: string): string;
export declare function parseSums(text: string): Map<string, string>;
export declare function cacheRoot(env: Record<string, string | undefined>, platform: string, home: string): string;
export declare function downloadBase(pkg: { version: string; repository?: string | { url?: string } }, env: Record<string, string | undefined>): string;
