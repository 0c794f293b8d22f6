/** The 3.1.19 compliance storyboards against the agents (storyboards-current.ts). */
import { runCurrentStoryboards } from './storyboards-current.js';

runCurrentStoryboards('3.1.19');
