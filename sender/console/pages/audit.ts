/** Audit: every operator action, newest first (the page both consoles share). */
export { auditBody } from '../../../shared/console/audit.js';
