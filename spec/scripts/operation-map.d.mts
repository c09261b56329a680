export interface DerivedOperation {
  method: string;
  path: string;
  server: 'auth' | 'api';
  scope: string | null;
}
export interface DerivedOperationMap {
  scopes: string[];
  audience: string;
  operations: Record<string, DerivedOperation>;
}
export declare class OperationMapError extends Error {}
export declare function deriveOperationMap(doc: unknown): DerivedOperationMap;
export declare function renderOperationModule(map: DerivedOperationMap): string;
