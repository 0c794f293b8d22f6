/** The controller's published answers shared by every scenario. */

export type ControllerCode =
  'NOT_FOUND' | 'UNKNOWN_SCENARIO' | 'INVALID_PARAMS' | 'FORBIDDEN' | 'INVALID_TRANSITION';

export function refuse(error: ControllerCode, detail: string, currentState?: string | null) {
  return {
    success: false,
    error,
    error_detail: detail,
    ...(currentState !== undefined ? { current_state: currentState } : {}),
  };
}

export const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
