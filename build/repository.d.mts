/** Types of build/repository.mjs, for the TypeScript that imports it. */
export declare const NAMING_FILES: string[];
export declare function repositoryOf(pkg: { repository?: string | { url?: string } }): string | null;
export declare function projectRepository(root: string): string;
export declare function setRepository(root: string, next: string): string;
