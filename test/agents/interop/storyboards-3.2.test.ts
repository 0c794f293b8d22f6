/** The 3.2.0-beta.5 compliance storyboards against the agents (storyboards-current.ts). */
import { runCurrentStoryboards } from './storyboards-current.js';

runCurrentStoryboards('3.2.0-beta.5');
